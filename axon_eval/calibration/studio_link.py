"""The labelling studio from a notebook: :func:`studio` starts a rater's server and shows its link.

The server (:class:`axon_eval.studio.server.StudioApp`) runs in a daemon thread of the kernel; the link
opens the studio in a new browser tab (not inside the notebook: the notebook's own keyboard shortcuts
would compete with the studio's, and the studio forbids being framed). Notebooks read labels, never
write them: labelling happens in the studio's page.
"""

from __future__ import annotations

from pathlib import Path
from ..studio.server import StudioApp


class StudioLink:
    """A running studio: :attr:`url` (with its token), :meth:`stop`; shown in a notebook as a link."""

    def __init__(self, app: StudioApp) -> None:
        self.app = app
        self.url = app.url

    def _repr_html_(self) -> str:
        from html import escape

        return (f"<a href=\"{escape(self.url)}\" target=\"_blank\" rel=\"noopener noreferrer\">Open the labelling "
                f"studio for rater {escape(self.app.session.rater)}</a> (a new tab; the link carries a token)")

    def __repr__(self) -> str:
        return f"labelling studio for rater {self.app.session.rater}: {self.url}"

    def stop(self) -> None:
        """Stop the server and close the rater's journal."""
        self.app.stop()


def studio(pack: str | Path, rater: str = "r1", *, port: int = 0, display: bool = True) -> StudioLink:
    """Start the studio of ``rater`` over ``pack`` (``label init`` done) in a background thread and
    return its :class:`StudioLink` (displayed when IPython is present and ``display``)."""
    app = StudioApp(pack, rater, port=port)
    app.start()
    link = StudioLink(app)
    if display:
        try:
            from IPython.display import display as show

            show(link)
        except ImportError:
            print(repr(link))
    return link


__all__ = ["StudioLink", "studio"]
