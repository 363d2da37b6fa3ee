#!/usr/bin/env python3
"""Save the plain text of the snapshot's saved HTML to ``htmltotext.txt``.

Uses only the standard library (``html.parser``): the contents of script,
style, noscript, template, svg and similar elements are dropped, block
elements become line breaks, and whitespace is collapsed (one line per block,
no blank-line runs). Skipped when no saved HTML exists (wget or Chromium DOM).
"""
import os

from archivebox import pluginkit

PLUGIN = "htmltotext"

SKIP = {"script", "style", "noscript", "template", "svg", "math", "iframe", "object",
        "canvas", "select", "datalist"}
BLOCK = {"address", "article", "aside", "blockquote", "br", "caption", "dd", "details", "dialog",
         "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3",
         "h4", "h5", "h6", "header", "hr", "li", "main", "nav", "ol", "p", "pre", "section",
         "summary", "table", "tbody", "td", "tfoot", "th", "thead", "title", "tr", "ul", "body"}
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr", "param"}


def html_to_text(html):
    """Plain text of an HTML document (see module docstring)."""
    from html.parser import HTMLParser

    class Extractor(HTMLParser):
        def __init__(self):
            super().__init__(convert_charrefs=True)
            self.parts = []
            self.skip_stack = []
            self.title = []
            self.in_title = False
            self.pre_depth = 0

        def handle_starttag(self, tag, attrs):
            if tag == "title":
                self.in_title = True
                return
            if tag in SKIP and tag not in VOID:
                self.skip_stack.append(tag)
                return
            if tag in ("pre", "textarea"):
                self.pre_depth += 1
            if tag in BLOCK:
                self.parts.append("\n")

        def handle_startendtag(self, tag, attrs):
            if tag in BLOCK:
                self.parts.append("\n")

        def handle_endtag(self, tag):
            if tag == "title":
                self.in_title = False
                return
            if self.skip_stack:
                if tag in self.skip_stack:
                    while self.skip_stack:
                        if self.skip_stack.pop() == tag:
                            break
                return
            if tag in ("pre", "textarea") and self.pre_depth:
                self.pre_depth -= 1
            if tag in BLOCK:
                self.parts.append("\n")

        def handle_data(self, data):
            if self.in_title:
                self.title.append(data)
            elif not self.skip_stack:
                # source line breaks are plain whitespace, except inside <pre>
                self.parts.append(data if self.pre_depth else " ".join(data.split("\n")))

    parser = Extractor()
    try:
        parser.feed(html)
        parser.close()
    except AssertionError as err:
        pluginkit.log(f"WARNING: HTML parser stopped early: {err}")
    lines = []
    for line in "".join(parser.parts).split("\n"):
        line = " ".join(line.split())
        if line:
            lines.append(line)
    title = " ".join("".join(parser.title).split())
    return title, "\n".join(lines)


def main():
    pluginkit.start(PLUGIN)
    pluginkit.arm_timeout(pluginkit.timeout_for(PLUGIN, 30), "text extraction")
    path = pluginkit.find_main_html()
    if not path:
        pluginkit.finish("skipped", "no saved HTML in this snapshot (wget/dom)")
    html = pluginkit.decode_bytes(pluginkit.read_file(path), "text/html")
    _title, text = html_to_text(html)
    if not text:
        pluginkit.finish("failed", "page has no text", {"source": os.path.relpath(path, pluginkit.snap_dir())})
    pluginkit.write_atomic("htmltotext.txt", text + "\n")
    pluginkit.finish("succeeded", "htmltotext.txt", {
        "chars": len(text),
        "words": len(text.split()),
        "source": os.path.relpath(path, pluginkit.snap_dir()),
    })


if __name__ == "__main__":
    main()
