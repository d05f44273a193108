package federator.hadoop;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Set;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsPermission;

/**
 * Hadoop's checksummed local file system ({@code file://}) that sets a file's permission bits through
 * Java instead of a {@code chmod} process.
 *
 * <p>Without Hadoop's native library, {@link RawLocalFileSystem#setPermission} runs {@code chmod} for
 * every file it creates, and Spark creates four per micro-batch (its offset and commit log entries,
 * each with a checksum file): about 6 ms per process here, a quarter of an empty batch. Modes Java
 * cannot express (setuid, setgid, sticky) and file stores without POSIX attributes still go through
 * Hadoop's own path.
 */
public class LocalFileSystem extends org.apache.hadoop.fs.LocalFileSystem {
  public LocalFileSystem() {
    super(new Raw());
  }

  /** The raw file system underneath the checksums: the only place the mode is set. */
  public static class Raw extends RawLocalFileSystem {
    private static final int PERMISSION_BITS = 0777;

    // Bit i of a Unix mode, from "others execute" (1) to "owner read" (0400).
    private static final PosixFilePermission[] BY_BIT = {
      PosixFilePermission.OTHERS_EXECUTE, PosixFilePermission.OTHERS_WRITE,
      PosixFilePermission.OTHERS_READ, PosixFilePermission.GROUP_EXECUTE,
      PosixFilePermission.GROUP_WRITE, PosixFilePermission.GROUP_READ,
      PosixFilePermission.OWNER_EXECUTE, PosixFilePermission.OWNER_WRITE,
      PosixFilePermission.OWNER_READ,
    };

    @Override
    public void setPermission(Path path, FsPermission permission) throws IOException {
      int mode = permission.toShort();
      if ((mode & ~PERMISSION_BITS) != 0) {
        super.setPermission(path, permission);
        return;
      }
      Set<PosixFilePermission> bits = EnumSet.noneOf(PosixFilePermission.class);
      for (int bit = 0; bit < BY_BIT.length; bit++) {
        if ((mode & (1 << bit)) != 0) {
          bits.add(BY_BIT[bit]);
        }
      }
      try {
        Files.setPosixFilePermissions(pathToFile(path).toPath(), bits);
      } catch (UnsupportedOperationException notPosix) {
        super.setPermission(path, permission);
      }
    }
  }
}
