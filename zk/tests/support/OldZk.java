import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;

/**
 * An old-layout ZooKeeper client for kwire's compatibility tests, on ZooKeeper's own Java client:
 * the calls Kafka 0.8 consumers and the seeds' Curator jobs make (create/setData with the offset
 * as decimal text, getChildren to enumerate partitions, getData to read one).
 *
 * Usage: java -cp 'JARS/*' OldZk.java SERVER COMMAND...
 *   mkdirs:PATH        create PATH and its parents with empty data (Curator creatingParentsIfNeeded)
 *   create:PATH=VALUE  create PATH with VALUE as UTF-8 bytes
 *   set:PATH=VALUE     setData PATH to VALUE, any version
 *   get:PATH           prints "OLDZK get PATH <value>"
 *   ls:PATH            prints "OLDZK ls PATH <child>,<child>..." (sorted)
 */
public class OldZk {
    public static void main(String[] args) throws Exception {
        CountDownLatch connected = new CountDownLatch(1);
        ZooKeeper zk = new ZooKeeper(args[0], 10000, event -> {
            if (event.getState() == Watcher.Event.KeeperState.SyncConnected) {
                connected.countDown();
            }
        });
        if (!connected.await(15, TimeUnit.SECONDS)) {
            System.err.println("OldZk: no connection to " + args[0]);
            System.exit(2);
        }
        for (int i = 1; i < args.length; i++) {
            String command = args[i];
            int colon = command.indexOf(':');
            String op = command.substring(0, colon);
            String rest = command.substring(colon + 1);
            String[] pathValue = rest.split("=", 2);
            switch (op) {
                case "mkdirs": {
                    StringBuilder at = new StringBuilder();
                    for (String part : rest.substring(1).split("/")) {
                        at.append('/').append(part);
                        try {
                            zk.create(at.toString(), new byte[0], ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
                        } catch (KeeperException.NodeExistsException e) {
                            // already there
                        }
                    }
                    break;
                }
                case "create":
                    zk.create(pathValue[0], pathValue[1].getBytes(StandardCharsets.UTF_8),
                        ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
                    break;
                case "set":
                    zk.setData(pathValue[0], pathValue[1].getBytes(StandardCharsets.UTF_8), -1);
                    break;
                case "get":
                    byte[] data = zk.getData(rest, false, null);
                    System.out.println("OLDZK get " + rest + " " + new String(data, StandardCharsets.UTF_8));
                    break;
                case "ls":
                    List<String> children = new ArrayList<>(zk.getChildren(rest, false));
                    Collections.sort(children);
                    System.out.println("OLDZK ls " + rest + " " + String.join(",", children));
                    break;
                default:
                    System.err.println("OldZk: unknown command " + command);
                    System.exit(2);
            }
        }
        zk.close();
    }
}
