"""A small book with one topic per page: enough (context, text) pairs for the embedder to adapt to."""

ADAPT_PAGES = {
    f"docs/topic-{n}.md": f"# Topic {n}\n\n## {title}\n\n{body}\n"
    for n, (title, body) in enumerate(
        [
            ("Installing", "Run npm install to add the package to a project."),
            ("Reducers", "A reducer computes the next state from the state and an action."),
            ("Actions", "An action is a plain object with a type field."),
            ("Store", "The store holds the state tree and lets you dispatch actions."),
            ("Selectors", "Selectors read and derive values from the state."),
            ("Middleware", "Middleware wraps dispatch, for logging or async work."),
            ("Testing", "Test reducers as pure functions with plain inputs."),
            ("Thunks", "A thunk is a function dispatched to run async logic."),
            ("Immutability", "Never mutate state: return new objects instead."),
            ("Devtools", "The devtools extension shows each action and state."),
        ]
    )
}
