"""Generation: prompts, the answer stream (LLM or extractive), citation markers and quotes."""
