"""The offline model's entity and relation extractor: deterministic, no weights, English and Chinese.

English: runs of capitalised words (with `of`, `de`, `von`, `the`, `&` inside), acronyms, CamelCase and
versioned product names, quoted titles and dates. What is not an entity is stopped by lists, not by
luck: sentence-initial words that the text never capitalises elsewhere ("Returns", "See", "However"),
RFC 2119 keywords ("MUST", "MAY NOT"), man-page and document section words ("SYNOPSIS", "Note"),
licence boilerplate ("Cover Texts", "Invariant Sections") and pieces of words a typesetter hyphenated
across lines ("Docu-"), which are mended before anything is read. Each entity gets a kind (person,
organisation, place, product, date, event, title, term) from cues in the name and around it: a title or
given name, an organisation or place word, a verb of speech, a year.

Chinese: jieba's part-of-speech tags for person (nr), place (ns), organisation (nt) and other proper
nouns (nz), and 《titles》.

Relations: two entities in one sentence, weighted by how many sentences they share, described by the
first such sentence (the evidence a person can read).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from lore_common.text import STOPWORDS, has_cjk, jieba, repair_hyphenation, sentences
from lore_core.labels import ABSTRACT, DOCUMENT, EVENT, OBJECTIVE, TYPE_LABELS, type_label

EntityKind = Literal["person", "organisation", "place", "product", "date", "event", "title", "term"]

# The contract's four entity types go on the wire as they are; people read their labels (lore_core.labels).
TYPE_OF_KIND: dict[str, str] = {
    "person": OBJECTIVE,
    "organisation": OBJECTIVE,
    "place": OBJECTIVE,
    "product": OBJECTIVE,
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
    eight nine ten""".split()
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
    street road avenue kingdom republic region district peninsula desert coast""".split()
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
    r"championships?|trophy|tournament|series|games|grand prix)\b",
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
_TOKEN = re.compile(r"[A-Za-z][A-Za-z0-9'’.\-]*[A-Za-z0-9]|[A-Za-z]|&|\d+(?:\.\d+)*")
_CAMEL = re.compile(r"^[a-z]+[A-Z]|[A-Za-z]+\d|^[A-Z]{2,}[a-z]")
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


def _capitalised_elsewhere(text: str) -> set[str]:
    """Words the text capitalises somewhere other than at the start of a sentence: those are names."""
    seen: set[str] = set()
    for sentence in sentences(text):
        if _shouting(sentence):
            continue
        tokens = _TOKEN.findall(sentence)
        for token in tokens[1:]:
            if _is_capitalised(token):
                seen.add(_clean_token(token).lower())
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


def _candidates(sentence: str, known: set[str] | None = None) -> list[tuple[str, int]]:
    """Runs of capitalised tokens in a sentence (connectors allowed inside), with their start offset.
    In a sentence in capitals only words in `known` (names the text writes in mixed case) or known
    places count as capitalised."""
    shouting = _shouting(sentence)
    runs: list[tuple[str, int]] = []
    current: list[str] = []
    start = previous_end = 0
    for match in _TOKEN.finditer(sentence):
        token = match.group(0)
        gap = sentence[previous_end : match.start()]
        previous_end = match.end()
        continues = gap.strip() == "." and bool(current) and current[-1] in _NAME_PREFIXES
        breaks = (current and gap.strip() != "" and not continues) or (
            token.upper() in _RFC_KEYWORDS and token.isupper()
        )
        if breaks and current:
            runs.append((" ".join(current), start))
            current = []
        if token.upper() in _RFC_KEYWORDS and token.isupper():
            continue
        if token[:1].isdigit():
            year = bool(_YEAR.fullmatch(token))
            if (
                current
                and current[-1][:1].isupper()
                and not current[-1][:1].isdigit()
                and not year
                and _numbered(sentence, token, match.end())
            ):
                current.append(token)  # "Apollo 11", "Python 3.12", "Locker 7"
            elif current:
                runs.append((" ".join(current), start))
                current = []
            continue
        capitalised = _is_capitalised(token)
        if shouting and capitalised:
            lowered = _clean_token(token).lower()
            capitalised = lowered in (known or set()) or lowered in _PLACES
        if capitalised or (token[:1].islower() and _CAMEL.search(token)):
            if not current:
                start = match.start()
            current.append(token)
        elif current and token.lower() in _CONNECTORS:
            current.append(token)
        elif current:
            runs.append((" ".join(current), start))
            current = []
    if current:
        runs.append((" ".join(current), start))
    return runs


def _trim(words: list[str]) -> list[str]:
    while words and (words[-1].lower() in _CONNECTORS or words[-1].endswith("-")):
        words = words[:-1]
    while words and (words[0].lower() in _CONNECTORS | {"a", "an"} or words[0][:1].isdigit()):
        words = words[1:]
    return words


def _kind(name: str, sentence: str, offset: int, quoted: bool) -> EntityKind:
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
    acronym = name.isupper() and len(name) <= 6 and len(words) == 1
    if (any(w in _ORG_WORDS for w in lowered) or acronym) and not any(c.isdigit() for c in name):
        return "organisation"
    if lowered[0] in _PLACES or any(w in _PLACE_WORDS for w in lowered[1:]) or lowered[-1] in _PLACES:
        return "place"
    if before and before[0].lower().strip(".") in _TITLES:
        return "person"
    name_like = len(words) in (2, 3) and all(w[:1].isupper() and not w.isupper() for w in words)
    if name_like and (lowered[0] in _GIVEN_NAMES or _SPEECH.match(after) or _PERSON_CUE.match(after)):
        return "person"
    if len(words) == 1 and (_SPEECH.match(after) or _PERSON_CUE.match(after)):
        return "person"
    if any(_CAMEL.search(w) or any(c.isdigit() for c in w) for w in words):
        return "product"
    if len(words) >= 2 and lowered[0] in _GIVEN_NAMES:
        return "person"
    return "term"


def _english(sentence: str, known_names: set[str]) -> list[tuple[str, EntityKind]]:
    found: list[tuple[str, EntityKind]] = []
    for match in _QUOTED.finditer(sentence):
        title = match.group(1).strip()
        if len(title.split()) <= 8 and title[:1].isupper():
            found.append((title, "title"))
    dates = [match.group(0) for match in _DATE.finditer(sentence)]
    found.extend((date, "date") for date in dates)
    for run, offset in _candidates(sentence, known_names):
        words = [_clean_token(w) if w not in ("&",) else w for w in run.split()]
        words = [w for w in words if w]
        # A sentence's first word is capitalised by grammar: keep it only when the text capitalises it
        # elsewhere too (a name), or it is an acronym or a product-like token.
        if offset == 0 or sentence[:offset].strip() in ('"', "“", "(", "-", "*"):
            while words and not (
                words[0].lower() in known_names
                or words[0].lower() in _PLACES
                or (words[0].isupper() and len(words[0]) > 1)
                or _CAMEL.search(words[0])
                or (len(words) >= 2 and words[0].lower() not in STOPWORDS | _NOT_NAMES | _OPENERS)
            ):
                words = _trim(words[1:])
        words = [w for w in words if w.upper() not in _SECTION_WORDS or not w.isupper() or len(words) > 1]
        while words and words[0].lower() in _NOT_NAMES:
            words = _trim(words[1:])
        if len(words) > 1 and words[0].lower().strip(".") in _TITLES:
            words = words[1:]  # "President Bill Clinton" is Bill Clinton; the title marks a person
        words = _trim(words)
        if not words:
            continue
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
        if _is_demonym(words):
            continue
        if any(name in date for date in dates):
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
    first shared sentence."""
    text = repair_hyphenation(text)
    known = _capitalised_elsewhere(text)
    entities: dict[str, Found] = {}
    pair_counts: Counter[tuple[str, str]] = Counter()
    pair_context: dict[tuple[str, str], str] = {}
    for index, sentence in enumerate(sentences(text)):
        names = _chinese(sentence) if has_cjk(sentence) else _english(sentence, known)
        present: list[str] = []
        for name, kind in names:
            key = name.lower()
            if key in entities:
                entity = entities[key]
                entity.mentions += 1
                if entity.kind == "term" and kind != "term":
                    entity.kind = kind
            else:
                entity = entities[key] = Found(name, kind, sentence[:300])
            if index not in entity.sentences:
                entity.sentences.append(index)
            if key not in present:
                present.append(key)
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
    for name, kind in _english(sentence, _capitalised_elsewhere(sentence)):
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
