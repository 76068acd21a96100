from __future__ import annotations

import pytest
from litestar.testing import TestClient

from lore_core.settings import DisplayConfig, GatewayConfig
from lore_gateway.app import Gateway


# Building the gateway in-process meets the OpenAI route's `data` deprecation warning, which the suite
# turns into an error; it says nothing about the labels.
@pytest.mark.filterwarnings("ignore::litestar.exceptions.base_exceptions.LitestarDeprecationWarning")
def test_the_console_reads_english_type_labels_by_default_and_chinese_when_configured() -> None:
    with TestClient(Gateway(GatewayConfig()).app) as client:
        english = client.get("/console/labels.json").json()
    assert english["language"] == "en"
    assert english["types"]["客观实体"] == "Physical entity" and english["types"]["文献实体"] == "Document"
    with TestClient(Gateway(GatewayConfig(), DisplayConfig(language="zh")).app) as client:
        chinese = client.get("/console/labels.json").json()
    assert chinese == {"language": "zh", "types": {t: t for t in english["types"]}}
