import sys

# The suite imports the whole workspace in each worker and starts services as processes many times:
# cache compiled modules even where PYTHONDONTWRITEBYTECODE is set (as the services themselves do).
sys.dont_write_bytecode = False

pytest_plugins = ["lore_common.testing.pytest_plugin"]
