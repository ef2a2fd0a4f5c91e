// Wait until every index is online (after db init).
// params: $seconds
// returns: -
CALL db.awaitIndexes($seconds)
