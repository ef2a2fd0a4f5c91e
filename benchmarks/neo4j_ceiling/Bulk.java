package memtrace.bench;

import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.neo4j.graphdb.Label;
import org.neo4j.graphdb.Node;
import org.neo4j.graphdb.RelationshipType;
import org.neo4j.graphdb.Transaction;
import org.neo4j.procedure.Context;
import org.neo4j.procedure.Mode;
import org.neo4j.procedure.Name;
import org.neo4j.procedure.Procedure;

/**
 * Writes through Neo4j's Java core API inside the server, bypassing Cypher: the benchmark
 * compares it with UNWIND + CREATE on the same rows to see how much of the write cost is
 * Cypher's and how much is the transaction itself (commit, stores, indexes).
 * Benchmark only: memtrace does not ship or install this procedure.
 */
public class Bulk {
    @Context public Transaction tx;

    public static class Count {
        public long count;

        public Count(long count) {
            this.count = count;
        }
    }

    @Procedure(name = "memtrace_bench.create_nodes", mode = Mode.WRITE)
    public Stream<Count> createNodes(
            @Name("label") String label, @Name("rows") List<Map<String, Object>> rows) {
        Label nodeLabel = Label.label(label);
        for (Map<String, Object> row : rows) {
            Node node = tx.createNode(nodeLabel);
            for (Map.Entry<String, Object> property : row.entrySet()) {
                node.setProperty(property.getKey(), property.getValue());
            }
        }
        return Stream.of(new Count(rows.size()));
    }

    @Procedure(name = "memtrace_bench.create_relationships", mode = Mode.WRITE)
    public Stream<Count> createRelationships(
            @Name("type") String type, @Name("pairs") List<List<String>> pairs) {
        RelationshipType relType = RelationshipType.withName(type);
        for (List<String> pair : pairs) {
            Node source = tx.getNodeByElementId(pair.get(0));
            Node target = tx.getNodeByElementId(pair.get(1));
            source.createRelationshipTo(target, relType).setProperty("op_id", "op");
        }
        return Stream.of(new Count(pairs.size()));
    }
}
