// Create new traces complete, with their properties and counts: their nodes are written in the same transaction, so no reader sees them half-written.
// params: $traces
// returns: -
// CREATE, not MERGE: a trace that exists after all fails the transaction on the id constraint
// (nothing is written) instead of getting a second copy of its nodes
UNWIND $traces AS row
CREATE (t:Trace {id: row.id})
SET t = row.props, t.id = row.id, t.load_state = 'complete', t.loaded_at = datetime()
SET t += row.counts
