"""Template filters of the web UI: ``{% load abx %}``."""

from django import template

from archivebox.core.urlcheck import mask_urls

register = template.Library()


@register.filter
def masked(value) -> str:
    """The text with the credentials of any URL in it hidden (``https://me:***@host/``)."""
    return mask_urls(str(value or ""))


@register.simple_tag
def query_with(params, **changes) -> str:
    """``?…`` of the query ``params`` with ``changes`` made (an empty value drops the key):
    the same list, another page or filter."""
    query = params.copy()
    for key, value in changes.items():
        if value in (None, ""):
            query.pop(key, None)
        else:
            query[key] = value
    encoded = query.urlencode()
    return f"?{encoded}" if encoded else "?"
