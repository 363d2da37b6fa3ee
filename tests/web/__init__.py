"""Tests of the web side: admin, task monitor, server, CLI experience, browser."""
