package ragkit.neo4j;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.CountDownLatch;

import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.connectors.BoltConnector;
import org.neo4j.configuration.connectors.HttpConnector;
import org.neo4j.configuration.connectors.HttpsConnector;
import org.neo4j.configuration.helpers.SocketAddress;
import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;
import org.neo4j.graphdb.GraphDatabaseService;

/**
 * Starts an embedded Neo4j Community database with a Bolt connector on 127.0.0.1.
 *
 * <p>Arguments: DATA_DIR [PORT (7687)]. Authentication is on: the user "neo4j" gets the password
 * in the environment variable NEO4J_PASSWORD (default ragkit-neo4j) the first time the data
 * folder is used. The password is never an argument: a command line is visible to every user
 * of the machine in ps. The process prints
 * "READY bolt://127.0.0.1:PORT" once Bolt accepts connections, and shuts the database down
 * cleanly on SIGTERM/SIGINT. With RAGKIT_NEO4J_WATCH_STDIN=1 (as the test fixture sets) it also
 * stops when standard input closes, so a test run that dies takes its database along.
 */
public final class Launcher {
    private Launcher() {}

    public static void main(String[] args) throws Exception {
        if (args.length < 1 || args.length > 2) {
            System.err.println("usage: Launcher DATA_DIR [PORT] (the password in NEO4J_PASSWORD, never an argument)");
            System.exit(2);
        }
        Path dataDir = Path.of(args[0]).toAbsolutePath();
        int port = args.length > 1 ? Integer.parseInt(args[1]) : 7687;
        String given = System.getenv("NEO4J_PASSWORD");
        String password = given == null || given.isEmpty() ? "ragkit-neo4j" : given;
        if (password.length() < 8) {
            System.err.println("password: Neo4j needs at least 8 characters");
            System.exit(2);
        }
        Files.createDirectories(dataDir);

        DatabaseManagementService service = new DatabaseManagementServiceBuilder(dataDir)
                .setConfig(BoltConnector.enabled, true)
                .setConfig(BoltConnector.listen_address, new SocketAddress("127.0.0.1", port))
                .setConfig(BoltConnector.encryption_level, BoltConnector.EncryptionLevel.DISABLED)
                .setConfig(HttpConnector.enabled, false)
                .setConfig(HttpsConnector.enabled, false)
                .setConfig(GraphDatabaseSettings.auth_enabled, true)
                .build();

        CountDownLatch stop = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            service.shutdown();
            stop.countDown();
        }, "neo4j-shutdown"));

        setInitialPassword(service, password);

        System.out.println("READY bolt://127.0.0.1:" + port);
        System.out.flush();

        if ("1".equals(System.getenv("RAGKIT_NEO4J_WATCH_STDIN"))) {
            watchStdin();
        }
        stop.await();
    }

    private static void watchStdin() {
        Thread stdinWatcher = new Thread(() -> {
            try {
                while (System.in.read() != -1) {
                    // keep reading until the parent closes our standard input
                }
            } catch (Exception ignored) {
                // treat a broken pipe as end of input
            }
            System.exit(0);  // runs the shutdown hook
        }, "stdin-watcher");
        stdinWatcher.setDaemon(true);
        stdinWatcher.start();
    }

    /** The first start of a data folder replaces the default "neo4j" password. */
    private static void setInitialPassword(DatabaseManagementService service, String password) {
        GraphDatabaseService system = service.database(GraphDatabaseSettings.SYSTEM_DATABASE_NAME);
        boolean mustChange = system.executeTransactionally(
                "SHOW USERS YIELD user, passwordChangeRequired WHERE user = 'neo4j' "
                        + "RETURN passwordChangeRequired",
                Map.of(),
                result -> result.hasNext() && Boolean.TRUE.equals(result.next().get("passwordChangeRequired")));
        if (mustChange) {
            system.executeTransactionally(
                    "ALTER USER neo4j SET PASSWORD $password CHANGE NOT REQUIRED",
                    Map.of("password", password));
        }
    }
}
