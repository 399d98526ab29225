"""Streamlit glue, in rooms: `shell` (the server, Streamlit's internals, stores and jobs, controls
and their URL keys, the scenario, widgets and charts in the page, the presenter, the page list,
the glossary), the page families `learn` (one scenario's two lanes) and `under_load` (the
traffic pages), and `teach` (the guided tour and its handout), each importing only those below
it. Pages call these; sim and charts never do."""
