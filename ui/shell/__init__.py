"""The app's shell: the server and its fixes, every Streamlit internal, the stores and jobs that
bound a page's work, the controls and their URL keys, the scenario, the widgets and the charts
in the page, the presenter's fitting to the screen, the page list and the glossary; front/ holds
their .js and .css. Below the page families and the teaching tools: it imports neither."""
