"""A credential inside an agent run: where its values may be typed, and their removal from all that is kept or sent.

The model only ever writes placeholders ({{cred.username}}, {{cred.password}}, {{cred.totp}}), each as the whole
text of a `type` action. A value is typed only into a field of its kind (the password into a password input, the
username into a text or email input of a sign-in form, or one marked autocomplete=username|email), on a document
whose own origin the credential allows (CredentialSite), through the one element handle that was checked.
Fields that received a value are remembered: the observation never reports their value and screenshots paint over
them. Everything the run records or sends is scrubbed first: the whole username, any piece of 4 or more characters
of the password or TOTP secret (in any letter case, and URL-encoded as a form sent with GET writes it), and the
query parameters of a GET form that carried one.
"""

from __future__ import annotations

import re
import secrets as token
from typing import TYPE_CHECKING
from urllib.parse import quote, quote_plus

from playwright.sync_api import Error as PlaywrightError

from runs.engine.spec import Credential, origin_of

if TYPE_CHECKING:
    from playwright.sync_api import ElementHandle, Locator, Page

SCRUBBED = "[secret]"
PIECE = 4  # the shortest piece of a password that is scrubbed on its own
SHOWN_KEPT = 20  # at most so many pieces shown on pages are painted over (the latest)
PLACEHOLDERS = {"{{cred.username}}": "username", "{{cred.password}}": "password", "{{cred.totp}}": "totp"}
USERNAME_TYPES = ("", "text", "email")
TOTP_TYPES = ("", "text", "tel", "number", "password")


class FillRefused(Exception):
    """A placeholder that may not be typed where the model asked; the model is told why and may try another way."""


def form_encoded(value: str) -> str:
    """application/x-www-form-urlencoded as browsers write it (WHATWG: '*' kept, '~' escaped, space as '+')."""
    return quote_plus(value, safe="*").replace("~", "%7E")


def _written_forms(value: str) -> set[str]:
    return {value, quote(value, safe=""), quote_plus(value, safe=""), form_encoded(value)}


def _lower(text: str) -> str:
    """Lower case, one character for one (so positions in the result are positions in the text)."""
    lowered = text.lower()
    if len(lowered) == len(text):
        return lowered
    return "".join(c.lower() if len(c.lower()) == 1 else c for c in text)


class Secrets:
    """The credential of one agent run, the fields that received its values, and scrubbing."""

    def __init__(self, credential: Credential | None):
        self.credential = credential
        self.marker = f"data-secret-{token.token_hex(4)}"  # set on filled fields, for masking
        self.filled: list[ElementHandle] = []
        self._whole: set[str] = set()  # scrubbed as a whole only (short or not secret: the username, a TOTP code)
        self._pieces: set[str] = set()  # scrubbed piece by piece, lower case
        self._field_names: set[str] = set()  # names of filled fields in a GET form: their URL parameters go
        self.shown: dict[str, None] = {}  # pieces the page showed as text (painted over in screenshots), oldest first
        if credential:
            if credential.username:
                self._whole |= _written_forms(credential.username)
            for secret in (credential.password, credential.totp_secret):
                if not secret:
                    continue
                forms = {_lower(form) for form in _written_forms(secret)}
                self._pieces |= {form for form in forms if len(form) >= PIECE}
                self._whole |= {form for form in _written_forms(secret) if len(form) < PIECE}
        self._compile()

    def _compile(self) -> None:
        grams = sorted({form[i : i + PIECE] for form in self._pieces for i in range(len(form) - PIECE + 1)})
        self._grams = re.compile("|".join(map(re.escape, grams))) if grams else None
        whole = sorted(self._whole, key=len, reverse=True)
        self._whole_pattern = re.compile("|".join(map(re.escape, whole))) if whole else None
        names = sorted(self._field_names)
        self._fields_pattern = (
            re.compile(r"([?&;](?:" + "|".join(re.escape(form_encoded(n)) for n in names) + r")=)[^&#\s\"'<>]*")
            if names
            else None
        )

    # -- typing ----------------------------------------------------------------------------------------------

    def fill(self, field: ElementHandle, text: str, timeout: float) -> None:
        """Type text into the field; a placeholder only where its value may go (FillRefused otherwise)."""
        kind = self._placeholder(text)
        if kind is None:
            field.fill(text, timeout=timeout)
            return
        credential = self.credential
        if credential is None:
            raise FillRefused("this run has no credential (cred)")
        if kind == "totp" and not credential.totp_secret:
            raise FillRefused(f"the credential {credential.name!r} has no TOTP secret")
        # The document the field belongs to, as the browser reports it (not what the page's scripts say).
        frame = field.owner_frame()
        document = frame.url if frame else ""
        if not credential.allows(document):
            origin = origin_of(document)
            where = f"{origin[0]}://{origin[1]}:{origin[2]}" if origin else "this document"
            raise FillRefused(f"the credential may not be typed on {where}")
        in_get_form = self._check_field(field, kind)
        value = {"username": credential.username, "password": credential.password}.get(kind)
        if kind == "totp":
            import pyotp

            value = pyotp.TOTP(credential.totp_secret).now()
            self._whole.add(value)
            self._compile()
        field.fill(value, timeout=timeout)
        self.filled.append(field)
        name = field.get_attribute("name")
        if in_get_form and name:
            self._field_names.add(name)
            self._compile()
        self.mark()

    @staticmethod
    def _placeholder(text: str) -> str | None:
        if "{{cred." not in text:
            return None
        kind = PLACEHOLDERS.get(text.strip())
        if kind is None:
            raise FillRefused(
                "a credential placeholder must be the whole text typed, alone: {{cred.username}}, {{cred.password}} "
                "or {{cred.totp}}"
            )
        return kind

    @staticmethod
    def _check_field(field: ElementHandle, kind: str) -> bool:
        """FillRefused unless the field is one the value belongs in; whether its form is sent with GET.
        Read through Playwright's own script world, which the page's scripts cannot reach."""
        if field.query_selector("xpath=self::input") is None:
            raise FillRefused(f"{{{{cred.{kind}}}}} can only be typed into an input field")
        kind_of_input = (field.get_attribute("type") or "").strip().lower()
        form = field.query_selector("xpath=ancestor::form[1]")
        if kind == "password" and kind_of_input != "password":
            raise FillRefused("{{cred.password}} can only be typed into a password field (input type=password)")
        if kind == "username":
            tokens = (field.get_attribute("autocomplete") or "").lower().split()
            sign_in_form = form is not None and form.query_selector("input[type=password i]") is not None
            if kind_of_input not in USERNAME_TYPES or not (sign_in_form or {"username", "email"} & set(tokens)):
                raise FillRefused(
                    "{{cred.username}} can only be typed into a text or email field of a form with a password "
                    "field, or one marked autocomplete=username or email"
                )
        if kind == "totp" and kind_of_input not in TOTP_TYPES:
            raise FillRefused("{{cred.totp}} can only be typed into a text, number or password field")
        if form is None:
            return False
        method = (form.get_attribute("method") or "get").strip().lower()
        return method not in ("post", "dialog")

    def mark(self) -> None:
        """Set the marker again on every filled field still in a page (a page may have taken it off); forget the
        fields of documents that are gone."""
        kept = []
        for field in self.filled:
            try:
                field.evaluate("(el, marker) => el.setAttribute(marker, '')", self.marker)
            except PlaywrightError:
                continue
            kept.append(field)
        self.filled = kept

    def still_marked(self) -> bool:
        """Whether every filled field still in a page carries the marker: a screenshot taken while a page had taken
        one off (it may, at any moment) would not have painted over that field."""
        for field in self.filled:
            try:
                if not field.evaluate("(el, marker) => el.hasAttribute(marker)", self.marker):
                    return False
            except PlaywrightError:  # its document is gone: nothing of it is on screen
                continue
        return True

    def masks(self, page: Page) -> list[Locator]:
        """What screenshots paint over: every password field, every field that received a value, and every element
        whose text showed a piece of a secret in the last observations (matched in Playwright's own script world,
        so the pieces never reach the page's scripts)."""
        self.mark()
        shown = [page.get_by_text(piece) for piece in list(self.shown)[-SHOWN_KEPT:]]
        return [page.locator("input[type=password i]"), page.locator(f"[{self.marker}]"), *shown]

    # -- scrubbing ---------------------------------------------------------------------------------------------

    def scrub(self, text: str, *, shown: bool = False) -> str:
        """The text with every secret replaced by SCRUBBED; shown: the text is what the page shows (its pieces of a
        secret are then painted over in the next screenshots)."""
        if self._fields_pattern is not None:
            text = self._fields_pattern.sub(lambda m: m.group(1) + SCRUBBED, text)
        if self._grams is not None:
            text = self._scrub_pieces(text, shown)
        if self._whole_pattern is not None:
            if shown:
                self.shown.update(dict.fromkeys(m.group(0) for m in self._whole_pattern.finditer(text)))
            text = self._whole_pattern.sub(SCRUBBED, text)
        return text

    def _scrub_pieces(self, text: str, shown: bool) -> str:
        """Each longest run of characters that is a piece (4 or more characters) of a secret, in any case."""
        lowered = _lower(text)
        spans, at = [], 0
        while match := self._grams.search(lowered, at):
            start = match.start()
            end = match.end()
            for form in self._pieces:
                if lowered[start:end] not in form:
                    continue
                stop = end
                while stop < len(lowered) and lowered[start : stop + 1] in form:
                    stop += 1
                end = max(end, stop)
            spans.append((start, end))
            at = end
        if not spans:
            return text
        if shown:
            self.shown.update(dict.fromkeys(text[start:end] for start, end in spans))
        out, last = [], 0
        for start, end in spans:
            out += [text[last:start], SCRUBBED]
            last = end
        out.append(text[last:])
        return "".join(out)

    def scrub_all(self, value: object) -> object:
        """scrub() every string in a JSON value, keys included, before it is serialised."""
        if isinstance(value, str):
            return self.scrub(value)
        if isinstance(value, list):
            return [self.scrub_all(item) for item in value]
        if isinstance(value, dict):
            return {self.scrub(str(key)): self.scrub_all(item) for key, item in value.items()}
        return value
