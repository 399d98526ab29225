"""Helpers the tests share (not tests themselves): AppTest, the CLI, small charts, a server."""
