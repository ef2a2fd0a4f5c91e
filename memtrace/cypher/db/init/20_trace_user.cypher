// Timelines of one user.
// params: -
// returns: -
CREATE INDEX trace_user IF NOT EXISTS FOR (n:Trace) ON (n.user_id)
