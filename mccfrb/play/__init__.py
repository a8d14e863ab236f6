"""Play against a strategy in a browser: a session and its local web page.

`PlaySession` holds the match (`session.py`), `make_server` serves it
(`server.py`), `views.py` draws each game's cards and pot, and `static/`
holds the page (plain HTML, JavaScript and CSS). `browser.py` drives the page
in headless Chromium for the tests and the screenshot of docs/pages/play.md.
"""

from mccfrb.play.server import make_server
from mccfrb.play.server import url
from mccfrb.play.session import Bot
from mccfrb.play.session import PlayError
from mccfrb.play.session import PlaySession
from mccfrb.play.session import summarize
