"""The managed local Neo4j server: the official Maven Central jars run as a real server."""
