"""Reading bookmark imports: the pure parsing functions (the CLI tests drive them with real files)."""

import datetime as dt

import pytest

from archivebox.core.urlinput import InputError, Seed, better_title, detect, parse, parse_date


def test_a_hook_title_replaces_an_import_title_only_when_it_is_a_real_title():
    url = "https://example.com/page/"
    assert better_title("A real title", url)
    assert not better_title("", url) and not better_title("   ", url)
    assert not better_title("https://example.com/page", url) and not better_title("example.com/page/", url)


@pytest.mark.parametrize("value, expected", [
    ("1500000000", dt.datetime(2017, 7, 14, 2, 40, tzinfo=dt.timezone.utc)),
    (1500000000123, dt.datetime(2017, 7, 14, 2, 40, 0, 123000, tzinfo=dt.timezone.utc)),
    ("1500000000123456", dt.datetime(2017, 7, 14, 2, 40, 0, 123456, tzinfo=dt.timezone.utc)),
    ("2024-01-02T03:04:05Z", dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc)),
    ("Tue, 02 Jan 2024 10:00:00 GMT", dt.datetime(2024, 1, 2, 10, tzinfo=dt.timezone.utc)),
    ("not a date", None), ("", None), (None, None),
])
def test_dates_from_every_format(value, expected):
    assert parse_date(value) == expected


def test_a_seed_with_metadata_round_trips_through_a_crawl_line():
    seed = Seed("https://example.com/x", "Title", ("a", "b"), dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc))
    assert Seed.from_line(seed.to_line()) == seed
    assert Seed("https://example.com/y").to_line() == "https://example.com/y"
    assert Seed.from_line("# comment") is None and Seed.from_line("  ") is None


@pytest.mark.parametrize("text, kind", [
    ("<!DOCTYPE NETSCAPE-Bookmark-file-1>\n<DL>", "netscape"), ("<?xml version='1.0'?><rss/>", "rss"),
    ("<!doctype html><html>", "html"), ('[{"href": "https://a.example"}]', "json"),
    ('{"url": "https://a.example"}\n{"url": "https://b.example"}', "jsonl"), ('{"status": 1, "list": {}}', "json"),
    ("title,url,time_added,tags,status\n", "pocket"), ("https://a.example\nhttps://b.example", "txt"),
])
def test_auto_detection(text, kind):
    assert detect(text) == kind


def test_bad_input_is_one_clear_error():
    with pytest.raises(InputError, match="line 2 is not JSON"):
        parse('{"url": "https://a.example"}\n{broken', "jsonl")
    with pytest.raises(InputError, match="declares entities"):
        parse('<?xml version="1.0"?><!DOCTYPE r [<!ENTITY a "b">]><rss/>', "rss")
    with pytest.raises(InputError, match="unknown parser"):
        parse("https://a.example", "yaml")
