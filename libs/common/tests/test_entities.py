from __future__ import annotations

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
