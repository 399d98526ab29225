"""The teaching tools on top of the pages: the guided tour (its steps, checks and view) and its
printed handout."""
