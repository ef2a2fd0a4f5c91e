// One lease node per trace a `memtrace collect` receiver loads (receivers sharing a database take turns).
// params: -
// returns: -
CREATE CONSTRAINT collector_lease IF NOT EXISTS FOR (l:CollectorLease) REQUIRE l.trace_id IS UNIQUE
