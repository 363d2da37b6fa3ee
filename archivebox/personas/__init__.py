"""Personas: a named set of cookies (a Netscape cookies.txt) and a user agent, chosen per crawl."""
