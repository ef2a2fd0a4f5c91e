// Variable ids are unique within a trace.
// params: -
// returns: -
CREATE CONSTRAINT variable_key IF NOT EXISTS FOR (n:Variable) REQUIRE (n.trace_id, n.id) IS UNIQUE
