// Unique trace ids.
// params: -
// returns: -
CREATE CONSTRAINT trace_id IF NOT EXISTS FOR (t:Trace) REQUIRE t.id IS UNIQUE
