"""What the CLI tests share."""

import pytest

import cli.common


@pytest.fixture
def no_work(monkeypatch):
    """Any simulation the command starts fails the test: the path must be refused first."""
    def work(*args, **kwargs):
        raise AssertionError("the command started its work before checking its output path")
    monkeypatch.setattr(cli.common, "workload_from", work)
