"""The API's routes, one router per concern; shared state comes through ``bookwise.api.deps``."""
