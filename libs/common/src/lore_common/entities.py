"""The offline model's entity and relation extractor: deterministic, no weights, English and Chinese.

English: runs of capitalised words (with `of`, `de`, `von`, `the`, `&` inside), acronyms, CamelCase and
versioned product names, quoted titles, dates, and code identifiers kept whole (CONSTANT_CASE,
snake_case, dotted paths). What is not an entity is stopped by general rules, not by luck: a word that
grammar capitalises (a sentence's, a list item's or a colon's first word) names something only when the
text capitalises it inside a sentence too, and never when it is a pronoun, an adverb or a common English
word (english_words.txt, SCOWL) at the head of common words ("His", "Usually", "Existing Customers"); a
common word alone in capitals is a name only when the text capitalises it twice and never writes it in
lower case; quoted speech is no title; a number goes with a product's name, not a place's or a person's
("Switzerland 300", "Lee 4"); section numbers, citation keys, TeX, URLs and e-mail addresses are read for
no names; short lines (a signature's, an address's) are units of their own. Stop lists remain for RFC
2119 keywords, man-page section words, licence boilerplate and word pieces a typesetter hyphenated.
Each entity gets a kind from clear cues only (a title or given name, an organisation's or place's word, a
known place, a verb of speech, a product's number); a name without one is a "name", a physical entity on
the wire, so that one name keeps one type.

Chinese: jieba's part-of-speech tags for person (nr), place (ns), organisation (nt) and other proper
nouns (nz), and 《titles》.

Relations: two entities in one sentence, weighted by how many sentences they share, described by the
first such sentence (the evidence a person can read); a contents line relates nothing and describes an
entity only until a sentence does."""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Literal

from lore_common.text import STOPWORDS, has_cjk, jieba, repair_hyphenation, sentences
from lore_core.labels import ABSTRACT, DOCUMENT, EVENT, OBJECTIVE, TYPE_LABELS, type_label

# "name": a proper name with no cue to what it names; "term" is kept for callers that filter on it.
EntityKind = Literal[
    "person", "organisation", "place", "product", "identifier", "name", "date", "event", "title", "term"
]

# The contract's four entity types go on the wire as they are; people read their labels (lore_core.labels).
TYPE_OF_KIND: dict[str, str] = {
    "person": OBJECTIVE,
    "organisation": OBJECTIVE,
    "place": OBJECTIVE,
    "product": OBJECTIVE,
    "identifier": OBJECTIVE,
    "name": OBJECTIVE,
    "date": EVENT,
    "event": EVENT,
    "title": DOCUMENT,
    "term": ABSTRACT,
}

# Words that are capitalised for a reason other than being a name.
_RFC_KEYWORDS = frozenset("MUST SHALL SHOULD MAY REQUIRED RECOMMENDED OPTIONAL NOT".split())
_NOT_NAMES = frozenset(
    """however therefore thus hence moreover furthermore also additionally finally first second third
    then otherwise instead meanwhile nevertheless nonetheless note notes see returns return example
    examples usage default defaults options option description synopsis name names bugs author authors
    copyright license licence warning warnings caution important tip yes not none true false null each
    every some many most all any both either neither such other another since although though because
    unless until once whether without within using set sets gets call calls run runs add adds create
    creates reads writes specifies indicates contains provides allows thanks figure table section
    chapter appendix page step part version errors error files environment diagnostics conforming
    history availability overview introduction summary conclusion abstract contents index references
    see_also todo fixme deprecated since_version parameters arguments value values result results
    today yesterday tomorrow here there where while after before during over under above below
    monday tuesday wednesday thursday friday saturday sunday
    let lets do does did done is are was were be been being has have had will would can could might
    must shall should may ok okay hi hello dear sincerely regards one two three four five six seven
    eight nine ten fig figs eq eqs ref refs tab sec vol pp""".split()
)
_BOILERPLATE = frozenset(
    """cover texts|front-cover texts|back-cover texts|invariant sections|document|modified version|
    secondary section|transparent copy|opaque copy|title page|program|work|covered work|licensee|
    licensor|contributor|contributors|software|the software|as is|warranty|liability|source code|
    object code|corresponding source|standard interface|system libraries|major component|
    user product|installation information|you|your|we|our|i|readme|changelog|todo""".replace("\n", "")
    .replace("    ", "")
    .split("|")
)
_SECTION_WORDS = frozenset(
    """NAME SYNOPSIS DESCRIPTION OPTIONS EXAMPLES EXAMPLE FILES ENVIRONMENT BUGS AUTHOR AUTHORS NOTES
    SEE ALSO RETURN VALUE VALUES ERRORS HISTORY COPYRIGHT LICENSE LICENCE WARNING TODO FIXME NOTE
    STANDARDS CONFORMING TO ATTRIBUTES VERSIONS EXIT STATUS USAGE SUMMARY OVERVIEW INTRODUCTION
    ABSTRACT CONTENTS TABLE OF AND OR THE A AN IN ON AT FOR BY WITH FROM IS ARE BE IF NO YES OK""".split()
)
# Abbreviations that open a place's name ("St. Moritz", "Mt. Everest"): the run goes on past their stop.
_NAME_PREFIXES = frozenset({"St", "Ste", "Mt", "Ft", "Pt"})
# Alone, these are a date's parts ("Fri, 13 Dec 2019"), not names; "Jan Smith" and "Sun Microsystems"
# stay names.
_DATE_WORDS = frozenset(
    "mon tue tues wed thu thur thurs fri sat sun jan feb mar apr jun jul aug sep sept oct nov dec".split()
)
_CONNECTORS = frozenset({"of", "de", "la", "le", "du", "von", "van", "der", "den", "del", "the", "&"})
_TITLES = frozenset(
    """mr mrs ms miss dr prof professor sir dame lord lady president king queen prince princess pope
    senator governor general admiral captain judge minister chancellor mayor rev""".split()
)
_GIVEN_NAMES = frozenset(
    """aaron ada adam alan albert alexander alice amanda amy andrew angela anna anne anthony barbara ben
    benjamin bill bob brian carl carlos charles charlotte chris christopher claire daniel david deborah
    donald dorothy edward elizabeth emily emma eric ernest frank fred frederick george grace hannah harry
    helen henry isaac jack jacob james jane jennifer jessica joan john jonathan joseph julia karen kate
    katherine kenneth laura linda linus lisa louis margaret maria marie mark martin mary matthew michael
    nancy nicholas nikola niels olivia patricia paul peter pierre rachel richard robert rosalind ruth
    sam samuel sarah stephen steven susan thomas tim timothy tom victoria william alan ken dennis bjarne
    guido larry sergey steve bill tim grace hedy katherine dorothy barbara""".split()
)
_ORG_WORDS = frozenset(
    """university college institute school academy foundation association society company corporation
    corp inc ltd llc gmbh plc group bank agency ministry department council committee commission
    party navy army force forces office bureau board union league club team laboratory laboratories
    labs lab press organisation organization consortium federation museum library hospital church
    court parliament congress senate government administration service services systems technologies
    networks airlines motors""".split()
)
_PLACE_WORDS = frozenset(
    """city county state province river lake mountain mountains island islands sea ocean valley bay
    street road avenue kingdom republic region district peninsula desert coast station airport park
    square bridge castle harbour harbor port canyon falls states""".split()
)
_PLACES = frozenset(
    """france germany italy spain portugal england scotland wales ireland britain china japan india
    russia canada mexico brazil argentina australia egypt israel iran iraq turkey greece poland sweden
    norway denmark finland iceland netherlands belgium switzerland austria hungary africa europe asia
    america paris london berlin rome madrid lisbon tokyo beijing shanghai moscow washington york boston
    chicago california texas florida virginia indiana michigan ohio atlanta sydney toronto vienna
    prague dublin edinburgh amsterdam brussels geneva zurich""".split()
)
# Words for a people or a language ("French", "Lebanese"): adjectives, not names of anything.
_DEMONYMS = frozenset(
    """african american arab asian australian austrian belgian brazilian british canadian chinese czech
    danish dutch egyptian english european finnish french german greek hungarian indian iranian iraqi
    irish israeli italian japanese jewish korean kurdish latin mexican muslim christian catholic
    norwegian pakistani palestinian polish portuguese russian scottish serbian spanish swedish swiss
    syrian thai turkish ukrainian welsh western eastern northern southern""".split()
)
_DEMONYM_ENDINGS = re.compile(r"^[A-Z][a-z]{3,}(?:ese|ish|ian|ean|iot)s?$")
_EVENT_WORDS = re.compile(
    r"\b(war|battle|summit|election|conference|festival|olympics|revolution|crisis|treaty|cup|"
    r"championships?|trophy|tournament|olympic games|grand prix)\b",
    re.I,
)
_SPEECH = re.compile(r"^\s*,?\s*(said|says|told|wrote|argued|added|explained|was born|died)\b")
_PERSON_CUE = re.compile(
    r"^\s+(?:was|is|became)\s+(?:an?|the)\s+(?:[a-z-]+\s+)?(?:physicist|chemist|scientist|engineer|"
    r"mathematician|writer|author|poet|painter|composer|musician|philosopher|politician|programmer|"
    r"inventor|biologist|astronomer|economist|historian|actor|actress|singer|admiral|officer|doctor)\b"
)
_MONTHS = "January|February|March|April|May|June|July|August|September|October|November|December"
_MONTHS_SHORT = r"(?:Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept?|Oct|Nov|Dec)\.?"
_DATE = re.compile(
    rf"\b(?:(?:{_MONTHS})\s+\d{{1,2}},?\s+\d{{4}}|\d{{1,2}}\s+(?:{_MONTHS})\s+\d{{4}}|(?:{_MONTHS})\s+\d{{4}}"
    rf"|(?:{_MONTHS}|{_MONTHS_SHORT})\s+\d{{1,2}}(?!\d)|\d{{4}}-\d{{2}}-\d{{2}})\b"
)
_MONTH_NAMES = frozenset(_MONTHS.lower().split("|"))
_OPENERS = frozenset(
    """the a an this that these those it in on at for and but or if when while after before he she they
    we i you his her their our my its there here what which who how why where as by from with to of""".split()
)
_PRODUCT_AFTER = re.compile(
    r"^\s+(?:language|system|protocol|format|file|files|standard|library|compiler|kernel|program|"
    r"command|tool|api|framework|database|server|client|package|module|function|specification)\b",
    re.I,
)
_YEAR = re.compile(r"\b(1[5-9]\d\d|20\d\d)\b")
_QUOTED = re.compile(r"[\"“《「]([^\"”》」\n]{2,60})[\"”》」]")
_TOKEN = re.compile(r"[^\W\d_][\w'’.\-]*[^\W_]|[^\W\d_]|&|\d+(?:\.\d+)*")
_CAMEL = re.compile(r"^[a-z]+[A-Z]|[A-Za-z]+\d|^[A-Z]{2,}[a-z]")
# A token that is a section or citation number, an exponent or a bibliography code, never a name's
# word: "F.4", "A.1.2", "E-05", "ApJ...236..351D", "MNRAS.389.1179L".
_CODE_TOKEN = re.compile(r"\.\.|\.\d|--|\.-|\d{5,}|^[Ee][-+]\d+$|^(?=[a-f]*\d)[0-9a-f]{8,}$")
# A reference list's author with their initials glued on ("BarthG", "CapperJL,"): two make a list.
_AUTHOR_INITIALS = re.compile(r"\b([A-Z][a-z]+)[A-Z]{1,3}\b(?=,| et al)")
# Code identifiers kept whole: CONSTANT_CASE and snake_case (an underscore inside), dotted paths of three
# or more parts ("os.path.join"). URLs and e-mail addresses are read for none of their parts.
_IDENTIFIER = re.compile(
    r"(?<![\w.@/-])(?:[A-Za-z][A-Za-z0-9]+(?:[._][A-Za-z0-9]{2,})*_[A-Za-z0-9]{2,}(?:[._][A-Za-z0-9]{2,})*"
    r"|[a-z_][a-z0-9_]+(?:\.[a-z_][A-Za-z0-9_]+){2,})(?![\w@/-]|\.\w)"
)
_ADDRESS = re.compile(r"\b(?:https?|ftp)://\S+|\bwww\.\S+|[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
# Read for no names: bracketed keys with no space, a citation's or a footnote's ("[GompfS]",
# "[a2019, b2020]"), TeX's commands ("\Gamma") and inline math ("$A_{\tt SL}$").
_CITATION = re.compile(
    r"\[[^\]\s]{1,60}(?:,\s?[^\]\s]{1,60})*\](?!\()|\\[A-Za-z]+|\$(?![\d\s])[^$\n]{1,200}?(?<!\s)\$"
)
# A contraction ("You've", "Here's", "Don't") is a pronoun or an adverb with a verb, never a name.
_CONTRACTION = re.compile(r"(?:['’](?:ve|re|ll|d|m)|n['’]t)$", re.I)
_CLOSED_CLASS = frozenset(
    """i me my mine you your yours he him his she her hers it its we us our ours they them their theirs
    this that these those who whom whose which what here there across along among amongst around behind
    beside besides beyond despite inside near onto outside past per plus through throughout toward
    towards underneath unlike upon versus via within without against above below""".split()
)
# Endings of adjectives and participles ("Federal", "Active", "Supplementary", "Adjusted"): alone, such
# a word in capitals names nothing.
_ADJECTIVE_END = re.compile(r"(?:al|ive|ary|ic|ous|ed|ing|able|ible|ful|less|ar)$")
# A contents line: dot leaders, or a section number, a title and a page number.
_CONTENTS = re.compile(r"(?:\.\s?){4,}|…{2,}|_{4,}|^\W*\d+(?:\.\d+)*\.?\s+\D.*\s\d{1,4}\s*$")
_CONTENTS_LINE = re.compile(
    r"^[^\n]*(?:(?:\.\s?){4,}|…{2,}|_{4,})[^\n]*$|^[ \t]*\d+(?:\.\d+)*\.?[ \t]+\D[^\n]*[ \t]\d{1,4}[ \t]*$",
    re.M,
)
# A short line that ends in no stop, followed by one that opens with a capital: a signature's, an
# address's or a heading's line, read as a unit of its own (never glued to the next line's name).
_SHORT_LINE = re.compile(r"^([ \t]*)(\S[^\n]{0,30}[^\s.,;:!?\-])[ \t]*\n(?=\1[A-Z])", re.M)
# Inflections and derived adverbs folded into a word's stem to look it up ("Existing", "Usually").
_SUFFIXES: tuple[tuple[str, str], ...] = (("ies", "y"), ("es", ""), ("s", ""), ("ed", ""), ("ed", "e"))
_SUFFIXES += (("ing", ""), ("ing", "e"), ("ly", ""), ("ily", "y"), ("ally", ""))
_ZH_KINDS = {
    "nr": "person",
    "nrfg": "person",
    "nrt": "person",
    "ns": "place",
    "nt": "organisation",
    "nz": "term",
}
_ZH_STOP = frozenset(
    "我们 你们 他们 她们 它们 这个 那个 这些 那些 本作 其中 以及 因此 但是 然而 可以".split()
)


@dataclass
class Found:
    """An entity as the extractor saw it: its name, kind, and the first sentence that names it."""

    name: str
    kind: EntityKind
    sentence: str
    mentions: int = 1
    sentences: list[int] = field(default_factory=list)


_LOWER_WORD = re.compile(r"\b[a-z][a-z'’-]+\b")


def _unpossessed(word: str) -> str:
    """The word without a possessive's "'s" ("Company's" is Company)."""
    return word[:-2] if word.endswith(("'s", "’s")) else word


@functools.cache
def _lexicon() -> frozenset[str]:
    """Common English words (SCOWL size 35, base forms; english_words.txt), read once."""
    text = resources.files("lore_common").joinpath("english_words.txt").read_text(encoding="utf-8")
    return frozenset(w for line in text.splitlines() if not line.startswith("#") for w in line.split())


@functools.lru_cache(maxsize=65536)
def common_word(word: str) -> bool:
    """Whether a word is a common English word ("Current", "Existing", "Usually", "EXPRESS") rather
    than a name: in the lexicon, or an inflection of a word in it. Capitals of four letters or fewer are
    acronyms ("ARM", "GNU"); given names and known places are names."""
    if (word.isupper() and len(word) <= 4) or (not word.isupper() and not word[1:].islower()):
        return False  # an acronym ("ARM") or CamelCase ("LaTeX")
    lowered = _unpossessed(word.lower())
    if lowered in _GIVEN_NAMES or lowered in _PLACES:
        return False
    lexicon = _lexicon()
    return lowered in lexicon or any(
        lowered.endswith(end) and len(lowered) - len(end) >= 3 and lowered[: -len(end)] + stem in lexicon
        for end, stem in _SUFFIXES
    )


def _closed_class(word: str) -> bool:
    """A pronoun, article, preposition or contraction ("His", "Across", "You've")."""
    lowered = _clean_token(word).lower()
    stem = _unpossessed(lowered)
    return (
        lowered in STOPWORDS
        or stem in _CLOSED_CLASS
        or stem in _OPENERS
        or bool(_CONTRACTION.search(lowered))
    )


def _function_word(word: str) -> bool:
    """A closed-class word, a discourse word ("However") or an adverb ("Usually", "Here's")."""
    lowered = _clean_token(word).lower()
    stem = _unpossessed(lowered)
    return (
        _closed_class(word)
        or lowered in _NOT_NAMES
        or (stem != lowered and common_word(stem))  # "Here's", "Company's"
        or (lowered.endswith("ly") and common_word(lowered))  # "Usually", "Approximately"
    )


@dataclass
class _Context:
    """What the whole text says about its words: those it capitalises inside sentences (in how many
    sentences) and those it writes in lower case."""

    capitalised: Counter[str]
    lower: set[str]

    @classmethod
    def of(cls, text: str, units: list[_Sentence]) -> _Context:
        return cls(_capitalised_elsewhere(units), set(_LOWER_WORD.findall(text)))

    def known(self, word: str) -> bool:
        return _clean_token(word).lower() in self.capitalised


def _is_capitalised(token: str) -> bool:
    return token[:1].isupper()


def _clean_token(token: str) -> str:
    return token.strip(".'’-")


def _shouting(sentence: str) -> bool:
    """A sentence in capitals (a headline, a banner, a table's header): its capitals mark no names."""
    words = [w for w in re.findall(r"[A-Za-z]{2,}", sentence)]
    upper = sum(w.isupper() for w in words)
    return len(words) >= 2 and upper >= 0.8 * len(words)


def _is_demonym(words: list[str]) -> bool:
    """ "French", "Lebanese", "Italians": a people or a language, not a named thing."""
    if len(words) != 1:
        return False
    word = words[0]
    lowered = word.lower()
    if lowered in _DEMONYMS or lowered.removesuffix("s") in _DEMONYMS:
        return True
    return bool(_DEMONYM_ENDINGS.match(word)) and lowered not in _GIVEN_NAMES


_MARKER = re.compile(r"\d+(?:\.\d+)*|[A-Za-z]|[ivxlcIVXLC]+")


def _tokens(sentence: str) -> Iterable[tuple[re.Match[str], str, bool]]:
    """The sentence's tokens, each with the gap before it and, for a capitalised one, whether grammar
    capitalises it there: the first word, the first after a list item's number or letter ("1.", "b)"),
    a colon or a dash."""
    previous_end = 0
    previous = ""
    for index, match in enumerate(_TOKEN.finditer(sentence)):
        gap = sentence[previous_end : match.start()]
        opens = match.group(0)[:1].isupper() and (
            index == 0
            or gap.rstrip().endswith((":", "—", "–", "•"))
            or (index == 1 and gap.strip()[:1] in (".", ")") and bool(_MARKER.fullmatch(previous)))
        )
        yield match, gap, opens
        previous_end, previous = match.end(), match.group(0)


def _mask(found: re.Match[str]) -> str:
    return "\0" * len(found.group(0))


@dataclass
class _Sentence:
    """A sentence as the extractor reads it: its code identifiers taken out whole; addresses, citation
    keys, TeX and underscores masked (read for no names); its tokens, read once."""

    text: str
    masked: str
    identifiers: list[str]
    tokens: list[tuple[re.Match[str], str, bool]]
    shouting: bool

    @classmethod
    def of(cls, text: str) -> _Sentence:
        masked, identifiers = text, []
        if "@" in masked or "//" in masked or "www." in masked:
            masked = _ADDRESS.sub(_mask, masked)
        if "[" in masked or "\\" in masked or "$" in masked:
            masked = _CITATION.sub(_mask, masked)
        if "_" in masked or "." in masked:
            identifiers = [match.group(0) for match in _IDENTIFIER.finditer(masked)]
            if identifiers:
                masked = _IDENTIFIER.sub(_mask, masked)
            masked = masked.replace("_", "\0")
        if len(_AUTHOR_INITIALS.findall(masked)) >= 2:
            masked = _AUTHOR_INITIALS.sub(lambda m: m.group(1).ljust(len(m.group(0)), "\0"), masked)
        return cls(text, masked, identifiers, list(_tokens(masked)), _shouting(masked))


def _reads_as_english(unit: _Sentence) -> bool:
    """Whether a sentence is English: of its first twelve lower-case words, a quarter or more are
    common English words (a sentence with fewer than six is given the benefit of the doubt)."""
    words = [m.group(0) for m, _, _ in unit.tokens if m.group(0).islower() and len(m.group(0)) > 1][:12]
    return len(words) < 6 or sum(common_word(w) or w in STOPWORDS for w in words) * 4 >= len(words)


def _capitalised_elsewhere(units: list[_Sentence]) -> Counter[str]:
    """Words the text capitalises somewhere grammar does not (inside a sentence), with the number of
    sentences that do: those are names."""
    seen: Counter[str] = Counter()
    for unit in units:
        if not unit.shouting:
            seen.update(
                {
                    _clean_token(match.group(0)).lower()
                    for match, _, opens in unit.tokens
                    if not opens and _is_capitalised(match.group(0))
                }
            )
    return seen


def _numbered(sentence: str, number_text: str, end: int) -> bool:
    """Whether the number ending at `end` belongs to the name before it ("Apollo 11 landed", "Python
    3.12."), rather than being a date, a score or a table's figure ("LONDON 1996-12-06", "Italy 3 Wales
    2", "Barcelona 13 9 3")."""
    rest = sentence[end:]
    if re.match(r"[-/:]?\d|[-/]", rest):
        return False
    following = rest.split(None, 1)
    if not following or following[0][:1] in ".!?;":
        return number_text.count(".") > 0  # a version ends a sentence; a bare figure is a score
    return following[0][:1].islower() or following[0][:1] in ",:)"


# Common nouns that number a document's own parts: "Figure 3", "Table 2" and "Step 4" name no thing.
_DOCUMENT_PARTS = frozenset(
    """figure fig table tab section sec chapter ch page step part appendix equation eq line item note
    volume vol issue number no column row paragraph slide sheet question example exercise footnote
    reference ref version level phase stage round day week year""".split()
)


def _labels(word: str) -> bool:
    """Whether a common word numbered is a thing's label ("Locker 3", "Gate 12", "Windows 10"): a
    singular noun, not a count ("Sections 2", "Approximately 3") nor a part of the document."""
    return word not in _DOCUMENT_PARTS and not word.endswith(("s", "ly"))


def _takes_number(run: list[str], number: str) -> bool:
    """Whether a name goes on with a number: a product's ("Apollo 11", "Python 3.12") or a thing's label
    ("Locker 3"), not a place's figure ("Switzerland 300"), a person's footnote or affiliation ("Lee
    4"), a common word's count ("Sections 2", "Approximately 3") or a part of the document ("Table 2")."""
    if "." in number:
        return True
    last = _clean_token(run[-1])
    if common_word(last) and not _labels(last.lower()):
        return False
    return not (
        last.lower() in _PLACES
        or run[0].lower() in _GIVEN_NAMES
        or (len(run) >= 2 and all(w[:1].isupper() and w[1:].islower() for w in run))  # a person's name
    )


def _candidates(unit: _Sentence, known: Counter[str]) -> list[tuple[str, int, bool]]:
    """Runs of capitalised tokens in a sentence (connectors allowed inside), with their start offset and
    whether the run opens the sentence. In a sentence in capitals only words in `known` (names the text
    writes in mixed case) or known places count as capitalised."""
    sentence, shouting = unit.masked, unit.shouting
    runs: list[tuple[str, int, bool]] = []
    current: list[str] = []
    start = 0
    opening = False

    def close() -> None:
        if current:
            runs.append((" ".join(current), start, opening))
            current.clear()

    for match, gap, opens in unit.tokens:
        token = match.group(0)
        initial = bool(current) and (
            current[-1] in _NAME_PREFIXES or (len(current[-1]) == 1 and current[-1].isupper())
        )
        spaced = not gap or gap.isspace()
        if current and not spaced and not (gap.strip() == "." and initial and _is_capitalised(token)):
            close()
        if token in _RFC_KEYWORDS or (
            token[:1].isalpha() and not token.isalpha() and _CODE_TOKEN.search(token)
        ):
            close()
            continue
        if token[:1].isdigit():
            year = bool(_YEAR.fullmatch(token))
            if (
                current
                and current[-1][:1].isupper()
                and not year
                and _numbered(sentence, token, match.end())
                and _takes_number(current, token)
            ):
                current.append(token)  # "Apollo 11", "Python 3.12", "Boeing 747"
            else:
                close()
            continue
        capitalised = _is_capitalised(token)
        if shouting and capitalised:
            lowered = _clean_token(token).lower()
            capitalised = lowered in known or lowered in _PLACES
        camel = token[:1].islower() and not (token.isalpha() and token.islower()) and _CAMEL.search(token)
        if capitalised or camel:
            if not current:
                start, opening = match.start(), opens
            current.append(token)
        elif current and token.lower() in _CONNECTORS:
            current.append(token)
        else:
            close()
    close()
    return runs


def _trim(words: list[str]) -> list[str]:
    if words and len(words[-1]) > 2 and _unpossessed(words[-1]) != words[-1]:
        words = [*words[:-1], words[-1][:-2]]  # "Christian’s" names Christian
    while words and (
        words[-1].lower() in _CONNECTORS
        or (len(words) > 1 and _closed_class(words[-1]))
        or words[-1].endswith("-")
        or (len(words) > 1 and len(words[-1]) == 1 and words[-1].isalpha() and words[-1] not in "IVX")
    ):  # the last test: "Kevin P." of a citation
        words = words[:-1]
    while words and (words[0].lower() in _CONNECTORS | {"a", "an"} or words[0][:1].isdigit()):
        words = words[1:]
    return words


def _cue(words: list[str]) -> bool:
    """A word that says what the name names: an organisation's or a place's word ("Foundation",
    "Station"), a known place or a given name."""
    lowered = [w.lower() for w in words]
    return (
        any(w in _PLACES for w in lowered)
        or lowered[0] in _GIVEN_NAMES
        or (len(words) > 1 and any(w in _ORG_WORDS or w in _PLACE_WORDS for w in lowered[1:]))
    )


def _kind(name: str, sentence: str, offset: int, quoted: bool) -> EntityKind:
    """A kind from clear cues only (a title or given name, an organisation's or place's word, a known
    place, a verb of speech, a product's number); a name with none is a "name"."""
    words = name.split()
    lowered = [w.lower().strip(".") for w in words]
    after = sentence[offset + len(name) :]
    before = sentence[:offset].split()[-1:] if offset else []
    if quoted:
        return "title"
    if _EVENT_WORDS.search(name):
        return "event"
    if _PRODUCT_AFTER.match(after):
        return "product"
    if any(w in _ORG_WORDS for w in lowered) and not any(c.isdigit() for c in name):
        return "organisation"
    if lowered[0] in _PLACES or any(w in _PLACE_WORDS for w in lowered[1:]) or lowered[-1] in _PLACES:
        return "place"
    if before and before[0].lower().strip(".") in _TITLES:
        return "person"
    name_like = len(words) in (2, 3, 4) and all(w[:1].isupper() and not w.isupper() for w in words)
    if name_like and (lowered[0] in _GIVEN_NAMES or _SPEECH.match(after) or _PERSON_CUE.match(after)):
        return "person"
    if len(words) == 1 and (_SPEECH.match(after) or _PERSON_CUE.match(after)):
        return "person"
    if any(_CAMEL.search(w) or any(c.isdigit() for c in w) for w in words):
        return "product"
    return "name"


def _title(quoted: str) -> str | None:
    """A quoted title ("Gone with the Wind"), its trailing comma left out; not quoted speech ("You've
    got some good sweepers on your side."), a date, or a contract's defined term ("Company")."""
    title = quoted.strip().rstrip(",;:")
    words = title.split()
    if not title[:1].isupper() or len(words) > 8 or title[-1:] in ".!?" or _DATE.search(title):
        return None
    if any(_CONTRACTION.search(w) or w.lower().strip(",") in _CLOSED_CLASS for w in words):
        return None
    content = [w for w in words if w.lower() not in STOPWORDS and w.lower() not in _CONNECTORS]
    if sum(w[:1].isupper() for w in content) * 2 <= len(content) and len(content) > 1:
        return None  # sentence case: speech or a phrase, not a title
    if all(w.lower() in STOPWORDS for w in words) or (
        len(words) == 1 and (common_word(title) or _function_word(title))
    ):
        return None  # "AS IS", a contract's "Company"
    return title


def _english(unit: _Sentence, context: _Context) -> list[tuple[str, EntityKind]]:
    sentence = unit.text
    found: list[tuple[str, EntityKind]] = []
    for match in _QUOTED.finditer(sentence):
        title = _title(match.group(1))
        if title and " " in title:
            found.append((title, "title"))
    dates = [match.group(0) for match in _DATE.finditer(sentence)]
    found.extend((date, "date") for date in dates)
    found.extend((identifier, "identifier") for identifier in unit.identifiers)
    if not _reads_as_english(unit):
        return found  # capitals in another language (German nouns, a translation's words) are no cue
    sentence = unit.masked
    for run, offset, opens in _candidates(unit, context.capitalised):
        words = [_clean_token(w) if w not in ("&",) else w for w in run.split()]
        words = [w for w in words if w]
        cue = bool(words) and _cue(words)
        # Grammar capitalises a sentence's first word: it names something only when the text
        # capitalises it inside a sentence too, or it is an acronym, a product's token or the start of a
        # name ("New York", "Grace Hopper"). Pronouns, adverbs and common words go ("His", "Usually",
        # "Current", "Existing Customers").
        while opens and words and not context.known(words[0]):
            first = words[0]
            title_case_next = len(words) > 1 and words[1][:1].isupper() and words[1][1:].islower()
            labelled = len(words) > 1 and words[1][:1].isdigit()  # "Locker 3": the number kept it
            if _function_word(first) or (
                common_word(first)
                and not cue
                and not labelled
                and (not title_case_next or common_word(words[1]))
            ):
                words = _trim(words[1:])
                continue
            if len(words) == 1 and not (
                (first.isupper() and len(first) > 1)
                or _CAMEL.search(first)
                or first.lower() in _PLACES
                or _SPEECH.match(sentence[offset + len(run) :])
            ):
                words = []  # a lone opener the text never capitalises elsewhere: "Pearl-millet", "Quisque"
            break
        while words and (_function_word(words[0]) or words[0].lower().removesuffix("s") in _NOT_NAMES):
            words = _trim(words[1:])
        words = [w for w in words if w.upper() not in _SECTION_WORDS or not w.isupper() or len(words) > 1]
        if len(words) > 1 and words[0].lower().strip(".") in _TITLES:
            words = words[1:]  # "President Bill Clinton" is Bill Clinton; the title marks a person
        words = _trim(words)
        if not words or len(words) > 5:
            continue  # more than five capitalised words: a heading, a banner or lines glued together
        name = " ".join(words)
        lowered = name.lower()
        if (
            len(name) < 2
            or lowered in STOPWORDS
            or lowered in _NOT_NAMES
            or lowered in _BOILERPLATE
            or name.upper() in _SECTION_WORDS
            or all(w.upper() in _SECTION_WORDS for w in words)
        ):
            continue
        if len(words) == 1 and (name in _RFC_KEYWORDS or lowered in _MONTH_NAMES or lowered in _DATE_WORDS):
            continue
        if len(words) == 1 and sentence[offset + len(run) :].startswith(":"):
            continue  # a field's label: "Date: …", "Subject: …"
        if _is_demonym(words) or any(name in date for date in dates):
            continue
        tail = words[-1].rpartition("-")[2]
        if tail.islower() and len(tail) > 2 and common_word(tail):
            continue  # a compound adjective: "German-language", "TE-encoded", "SETDB1-containing"
        if len(words) == 1 and lowered.strip(".") in _ORG_WORDS | _PLACE_WORDS:
            continue  # "Ltd", "Company", "University" alone
        if not cue and all(common_word(w) or w.lower() in _CONNECTORS for w in words):
            # Common words in capitals: a name only when the text says so, by capitalising the word in
            # two sentences and never writing it in lower case ("Congress"); a phrase in capitals
            # ("EXPRESS OR IMPLIED") or one that opens a sentence ("Existing Customers") never.
            if len(words) == 1:
                stem = lowered.removesuffix("s")
                plural = lowered.endswith("s") and (
                    common_word(stem)
                    or common_word(stem.removesuffix("e"))
                    or common_word(lowered[:-3] + "y")
                )
                if (
                    name.isupper()
                    or _ADJECTIVE_END.search(lowered)
                    or plural  # "Securities", "Units"
                    or lowered in _ORG_WORDS
                    or lowered in _PLACE_WORDS
                    or context.capitalised[lowered] < 2
                    or {lowered, stem, stem + "s"} & context.lower
                ):
                    continue
            elif opens or name.isupper():
                continue
        at = sentence.find(words[0], offset)
        found.append((name, _kind(name, sentence, max(at, 0), quoted=False)))
    return found


def _chinese(sentence: str) -> list[tuple[str, EntityKind]]:
    found: list[tuple[str, EntityKind]] = []
    for match in _QUOTED.finditer(sentence):
        found.append((match.group(1).strip(), "title"))
    titled = {name for name, _ in found}
    for word, flag in jieba().posseg.lcut(sentence):
        kind = _ZH_KINDS.get(flag)
        if kind and len(word) >= 2 and word not in _ZH_STOP and word not in titled:
            found.append((word, kind))  # type: ignore[arg-type]
        elif flag == "t" and re.search(r"\d{3,4}年", word):
            found.append((word, "date"))
    for match in re.finditer(r"\d{3,4}年(?:\d{1,2}月)?(?:\d{1,2}日)?", sentence):
        found.append((match.group(0), "date"))
    return found


def find_entities(text: str) -> tuple[dict[str, Found], Counter[tuple[str, str]], dict[tuple[str, str], str]]:
    """Entities by lower-cased name, the sentence counts of each co-occurring pair, and each pair's
    first shared sentence. A contents line ("3.1 Dogs in Ferelden ....... 61") names entities but
    relates none, and describes one only until a sentence does."""
    text = _SHORT_LINE.sub(r"\1\2\n\n", repair_hyphenation(text))
    text = _CONTENTS_LINE.sub(lambda m: f"\n{m.group(0)}\n", text)  # each a unit of its own
    units = [_Sentence.of(sentence) for sentence in sentences(text)]
    context = _Context.of(text, units)
    entities: dict[str, Found] = {}
    pair_counts: Counter[tuple[str, str]] = Counter()
    pair_context: dict[tuple[str, str], str] = {}
    contents_described: set[str] = set()
    for index, unit in enumerate(units):
        sentence = unit.text
        names = _chinese(sentence) if has_cjk(sentence) else _english(unit, context)
        contents = bool(_CONTENTS.search(sentence))
        present: list[str] = []
        for name, kind in names:
            key = name.lower()
            if key in entities:
                entity = entities[key]
                entity.mentions += 1
                if entity.kind == "name" and kind != "name":
                    entity.kind = kind
                if key in contents_described and not contents:
                    entity.sentence = sentence[:300]
                    contents_described.discard(key)
            else:
                entity = entities[key] = Found(name, kind, sentence[:300])
                if contents:
                    contents_described.add(key)
            if index not in entity.sentences:
                entity.sentences.append(index)
            if key not in present:
                present.append(key)
        if contents:
            continue
        # A name inside a longer one ("Curie" in "Marie Curie") is the same mention, not a pair.
        present = [k for k in present if not any(k != o and f" {k}" in f" {o}" for o in present)]
        for i, a in enumerate(present):
            for b in present[i + 1 :]:
                pair = (a, b) if a < b else (b, a)
                pair_counts[pair] += 1
                pair_context.setdefault(pair, sentence[:300])
    return entities, pair_counts, pair_context


def _contract_type(kind: str, allowed: Sequence[str]) -> str:
    wire = TYPE_OF_KIND.get(kind, OBJECTIVE)
    if allowed and wire not in allowed:
        return allowed[0]
    return wire


def extract_entities(text: str, entity_types: Sequence[str] = ()) -> dict[str, list[dict[str, Any]]]:
    """The extraction reply: `{entities[{name, type, kind, description}], relations[...]}` with the
    contract's type values (`entity_types` narrows them, as a schema does)."""
    entities, pair_counts, pair_context = find_entities(text)
    return {
        "entities": [
            {
                "name": e.name,
                "type": _contract_type(e.kind, entity_types),
                "kind": e.kind,
                "description": e.sentence,
            }
            for e in entities.values()
        ],
        "relations": [
            {
                "source": entities[a].name,
                "target": entities[b].name,
                "description": pair_context[(a, b)],
                "weight": float(count),
            }
            for (a, b), count in pair_counts.most_common()
        ],
    }


def entity_spans(tokens: Iterable[str]) -> list[tuple[int, int]]:
    """Token spans (start, end) of the named things found in a tokenised sentence (dates, events and
    titles left out): for scoring the extractor against token-annotated corpora (CoNLL, WikiANN)."""
    words = list(tokens)
    sentence = " ".join(words)
    starts, at = [], 0
    for word in words:
        starts.append(at)
        at += len(word) + 1
    spans: list[tuple[int, int]] = []
    unit = _Sentence.of(sentence)
    for name, kind in _english(unit, _Context.of(sentence, [unit])):
        if kind in ("date", "event", "title"):
            continue  # not a person, organisation or place: corpora score those spans
        offset = sentence.find(name)
        if offset < 0 or offset not in starts:
            continue
        first = starts.index(offset)
        last = first + len(name.split(" "))
        spans.append((first, last))
    return sorted(set(spans))


__all__ = ["ABSTRACT", "DOCUMENT", "EVENT", "OBJECTIVE", "TYPE_LABELS", "extract_entities", "type_label"]
