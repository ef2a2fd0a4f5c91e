// Session ids are unique within a trace.
// params: -
// returns: -
CREATE CONSTRAINT session_key IF NOT EXISTS FOR (n:Session) REQUIRE (n.trace_id, n.id) IS UNIQUE
