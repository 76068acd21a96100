pytest_plugins = ["lore_common.testing.pytest_plugin"]
