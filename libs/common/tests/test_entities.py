from __future__ import annotations

from pathlib import Path

from lore_common.entities import entity_spans, extract_entities

MAN_PAGE = """NAME
       asn1Parser - ASN.1 syntax tree viewer

DESCRIPTION
       See the manual. Returns zero on success. However, the parser MUST NOT fail. An implementation MAY
       reject input, and it SHOULD log. Note that the Free Software Foundation publishes the GNU General
       Public License. Permission is granted to copy this Docu-
       ment under the GNU Free Documentation License, with no Invariant Sections, no Front-Cover Texts,
       and no Back-Cover Texts. Hi-
       story: Linus Torvalds said the Linux kernel runs on ARM.
"""


def test_modal_verbs_discourse_words_boilerplate_and_fragments_are_never_entities() -> None:
    names = {e["name"] for e in extract_entities(MAN_PAGE)["entities"]}
    banned = {"See", "Returns", "MUST", "MUST NOT", "MAY", "SHOULD", "However", "Note", "Cover Texts"}
    banned |= {"Front-Cover Texts", "Back-Cover Texts", "Invariant Sections", "Hi-", "Docu-", "NAME"}
    assert not names & banned, names & banned
    assert not any(n.endswith("-") for n in names)
    assert {"Free Software Foundation", "GNU General Public License", "Linus Torvalds", "ARM"} <= names


def test_people_organisations_places_and_dates_get_their_kind_and_the_contract_type() -> None:
    text = (
        "Marie Curie was a physicist who worked at the University of Paris. Marie Curie and Pierre "
        "Curie discovered polonium in France. President Bill Clinton visited Indiana on March 3, 1996."
    )
    found = {e["name"]: e for e in extract_entities(text)["entities"]}
    assert found["Marie Curie"]["kind"] == "person" and found["Pierre Curie"]["kind"] == "person"
    assert found["Bill Clinton"]["kind"] == "person"
    assert found["University of Paris"]["kind"] == "organisation"
    assert found["France"]["kind"] == "place" and found["Indiana"]["kind"] == "place"
    assert found["March 3, 1996"]["kind"] == "date" and found["March 3, 1996"]["type"] == "事件实体"
    assert found["Marie Curie"]["type"] == "客观实体"
    assert "Marie Curie and Pierre Curie" not in found


def test_relations_join_entities_of_one_sentence_with_that_sentence_as_evidence() -> None:
    graph = extract_entities("Marie Curie and Pierre Curie discovered polonium. Grace Hopper wrote COBOL.")
    pairs = {frozenset((r["source"], r["target"])): r for r in graph["relations"]}
    both = pairs[frozenset(("Marie Curie", "Pierre Curie"))]
    assert "discovered polonium" in both["description"]
    assert frozenset(("Marie Curie", "Grace Hopper")) not in pairs


def test_spans_over_a_tokenised_sentence_for_corpus_scoring() -> None:
    tokens = "Scotland manager Craig Brown said on Thursday : he is in form .".split()
    assert (2, 4) in entity_spans(tokens) and (0, 1) in entity_spans(tokens)


def test_peoples_headlines_in_capitals_and_scores_are_not_names() -> None:
    text = (
        "SOCCER - JAPAN GET LUCKY WIN AGAINST SYRIA.\n\n"
        "The French and Lebanese delegations met the Italians in Paris on Dec 6. "
        "Barcelona 3 Real Madrid 2. Apollo 11 landed on the Moon. Envoys of Syria came, on Python 3.12."
    )
    names = {e["name"] for e in extract_entities(text)["entities"]}
    assert not names & {"SOCCER", "GET LUCKY WIN", "French", "Lebanese", "Italians", "Dec"}, names
    assert {"JAPAN", "SYRIA", "Paris", "Real Madrid", "Apollo 11", "Python 3.12"} <= names, names
    assert not any(n.startswith(("Barcelona ", "Real Madrid ")) for n in names)


def test_a_date_line_after_a_place_stays_a_date() -> None:
    tokens = "LONDON 1996-12-06".split()
    assert entity_spans(tokens) == [(0, 1)]


def test_an_e_mails_header_labels_and_date_parts_are_not_entities_and_st_stays_in_a_place() -> None:
    """A user's graph of e-mails read `Date`, `Fri`, `Dec`, `St` and `Moritz` as five entities."""
    mail = (
        "From: Fake Sender <fake@example.com>\nDate: Fri, 13 Dec 2019 10:00:00 +0000\nSubject: Family Day\n\n"
        "Winter sports in St. Moritz are popular. E. F. Benson wrote about St. Moritz and Davos. "
        "Jan Smith joined Sun Microsystems."
    )
    names = {e["name"] for e in extract_entities(mail)["entities"]}
    assert not names & {"Date", "Subject", "From", "Fri", "Dec", "St", "Moritz"}, names
    assert {"St Moritz", "Davos", "Jan Smith", "Sun Microsystems"} <= names


def _names(text: str) -> set[str]:
    return {e["name"] for e in extract_entities(text)["entities"]}


def test_words_capitalised_only_because_they_open_a_sentence_or_an_item_are_not_names() -> None:
    """A user's graph held "His", "Usually", "Here's", "Current", "New", "Existing" and "Across"."""
    text = (
        "His guide is short. Usually the party rests in Ferelden. Here's the plan for Alistair. "
        "Current releases ship monthly. New users read the manual. Existing Customers keep their plans. "
        "Across the valley lies Redcliffe Castle.\n\n"
        "1. Usually the guide is right.\n2. Security matters.\n- Approximately 3 dogs came.\n\n"
        "Note: Business goes on. New York is large. Grace Hopper wrote COBOL."
    )
    names = _names(text)
    noise = {"His", "Usually", "Here's", "Here", "Current", "New", "Existing", "Existing Customers", "Across"}
    noise |= {"Customers", "Security", "Approximately", "Approximately 3", "Business"}
    assert not names & noise, names & noise
    assert {"Ferelden", "Alistair", "Redcliffe Castle", "New York", "Grace Hopper", "COBOL"} <= names


def test_quoted_speech_legal_capitals_and_common_words_in_capitals_are_not_names() -> None:
    text = (
        'Morrigan said, "You\'ve got some good sweepers on your side." She read "By the Fireside," twice.\n\n'
        'THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED. '
        'This Agreement binds Acme Corp (the "Company"). The Company pays the Company\'s staff.'
    )
    names = _names(text)
    assert not any(n.endswith((".", ",")) or len(n.split()) > 5 for n in names), names
    assert not names & {"EXPRESS OR IMPLIED", "AS IS", "Company", "Company's", "EXPRESS", "IMPLIED"}, names
    assert {"Morrigan", "By the Fireside", "Acme Corp"} <= names, names


def test_numbers_and_section_numbers_are_not_glued_to_names() -> None:
    """ "Switzerland 300", an affiliation's "Lee 4" and "F.4" were entities; a version stays a name's."""
    text = (
        "The train crossed Switzerland 300 km from Geneva. Benjamin Charles Germain Lee 4 wrote it. "
        "See section F.4 and Sections 2 and 3. Apollo 11 landed with Python 3.12 aboard."
    )
    names = _names(text)
    assert not names & {"Switzerland 300", "Benjamin Charles Germain Lee 4", "F.4", "F", "Sections 2"}, names
    assert {"Switzerland", "Benjamin Charles Germain Lee", "Apollo 11", "Python 3.12"} <= names, names


def test_a_numbered_thing_is_a_name_and_a_numbered_part_of_the_document_is_not() -> None:
    """ "Locker 3" and "Crate 7" label things (memories about them relate them to what they hold); a
    document's "Table 2" and "Figure 3" name nothing."""
    text = "Locker 3 holds the parcel ZX0003Q. Crate 7 ships spare part KP007. Table 2 lists Figure 3."
    names = _names(text)
    assert {"Locker 3", "Crate 7", "ZX0003Q", "KP007"} <= names, names
    assert not names & {"Table 2", "Figure 3", "Table", "Figure", "Locker", "Crate"}, names


def test_code_identifiers_stay_whole_and_are_identifiers() -> None:
    """VERIFY_GROUP_FOR_USER was read as GROUP, USER and VERIFY, related to each other."""
    graph = extract_entities(
        "The job calls VERIFY_GROUP_FOR_USER, writes TAX_ID to QIBM_DB_SECADM and imports os.path.join. "
        "Mail admin@Example.ORG or see https://IBM.com/SQL_ADM for more."
    )
    kinds = {e["name"]: e["kind"] for e in graph["entities"]}
    assert {"VERIFY_GROUP_FOR_USER", "TAX_ID", "QIBM_DB_SECADM", "os.path.join"} <= set(kinds), kinds
    assert {kinds[n] for n in ("VERIFY_GROUP_FOR_USER", "TAX_ID", "os.path.join")} == {"identifier"}
    assert not set(kinds) & {"GROUP", "USER", "VERIFY", "ID", "TAX", "DB", "QIBM", "SECADM", "ORG", "IBM"}
    related = {n for r in graph["relations"] for n in (r["source"], r["target"])}
    assert related <= set(kinds)


def test_a_signature_block_gives_a_name_per_line() -> None:
    mail = "Thanks for the data.\n\nRegards,\nMallori Harrell\nUnstructured Technologies\nData Scientist\n"
    names = _names(mail)
    assert {"Mallori Harrell", "Unstructured Technologies"} <= names, names
    assert not any("Harrell Unstructured" in n or "Data Scientist" in n for n in names), names


def test_kinds_come_from_clear_cues_and_a_name_without_one_is_a_physical_entity() -> None:
    """Washington was a physical entity and Oslo a concept: one place, two types, by chance."""
    text = (
        "Ingrid Solberg flew from Oslo to Washington and on to Interlaken Central Station. "
        "Acme Inc filed XBRL data."
    )
    found = {e["name"]: e for e in extract_entities(text)["entities"]}
    assert {found[n]["type"] for n in ("Oslo", "Washington", "Ingrid Solberg", "XBRL")} == {"客观实体"}
    assert (
        found["Interlaken Central Station"]["kind"] == "place" and found["Acme Inc"]["kind"] == "organisation"
    )
    assert found["XBRL"]["kind"] == "name" and found["Oslo"]["kind"] == "name"


def test_contents_lines_relate_nothing_and_describe_nothing() -> None:
    """Table-of-contents lines ("61 Dogs in Ferelden …") were relations' and entities' descriptions."""
    text = (
        "Contents\n\n1 Dogs in Ferelden and Orzammar .......... 61\n2.3 Alistair and Morrigan 64\n\n"
        "Alistair met Morrigan in Ferelden."
    )
    graph = extract_entities(text)
    assert all("...." not in r["description"] for r in graph["relations"]), graph["relations"]
    pairs = {frozenset((r["source"], r["target"])) for r in graph["relations"]}
    assert frozenset(("Ferelden", "Orzammar")) not in pairs
    described = {e["name"]: e["description"] for e in graph["entities"]}
    assert described["Ferelden"] == described["Alistair"] == "Alistair met Morrigan in Ferelden."


def test_the_readme_people_example_stays_clean() -> None:
    folder = Path(__file__).resolve().parents[3] / "examples" / "people"
    names = set().union(*(_names(p.read_text(encoding="utf-8")) for p in sorted(folder.glob("*.md"))))
    expected = {"Marie Curie", "Pierre Curie", "University of Paris", "Nobel Prize", "Grace Hopper"}
    assert names == expected | {"United States Navy", "A-0", "COBOL"}, names


def test_a_translations_capitals_and_compound_adjectives_are_not_names() -> None:
    """A multilingual page gave "Gewësse" and "Bridderlechkeet"; a wiki gave "German-language"."""
    text = (
        "Jiddereen huet säi Verstand a säi Gewësse krut an soll an engem Geescht vu Bridderlechkeet denen "
        "anere géintiwwer handelen. The Duck page cites German-language sources and TE-encoded genes "
        "from Marie Curie."
    )
    names = _names(text)
    assert not names & {"Jiddereen", "Verstand", "Gewësse", "Geescht", "Bridderlechkeet"}, names
    assert not names & {"German-language", "TE-encoded"}, names
    assert "Marie Curie" in names
