// A prompt or parameter version is unique by name and version within an optimization run.
// params: -
// returns: -
CREATE CONSTRAINT config_version_key IF NOT EXISTS FOR (v:ConfigVersion) REQUIRE (v.run_id, v.name, v.version) IS UNIQUE
