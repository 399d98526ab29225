"""`streamlit run serve.py`, what `make run` starts: the app (app.py) served by Streamlit with
ui/shell/server.py's fixes for a room (a deep link opened first on a fresh server, a console without
errors, uploads bounded and let go). `streamlit run app.py` still works, without them."""

import streamlit as st
from starlette.middleware import Middleware

from ui.shell.server import PinServerAddress, UploadsPerSession, release_ended_uploads
from ui.shell.streamlit_internals import settle_pages_mode

settle_pages_mode()
app = st.App("app.py", middleware=[Middleware(PinServerAddress), Middleware(UploadsPerSession)],
             lifespan=release_ended_uploads)
