// The NameNode's view of every file, for final_state.json, and each file read back, in
// one JVM (a JVM costs 1.5 s to start on 2 cores: one per question would be slow).
// Uses only public client APIs present in 3.2 to 3.4: listStatus, isFileClosed,
// getLocatedBlocks, listOpenFiles, getDataNodeStats, open/read.
//   java -cp CONF:CLASSES:LIB/* HdfsChaosState --out FILE [--no-read] [--path P]
import java.io.*;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.*;
import java.util.zip.CRC32;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.*;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.protocol.*;
import org.apache.hadoop.hdfs.protocol.HdfsConstants.DatanodeReportType;

public class HdfsChaosState {
  static String q(String s) {
    if (s == null) return "null";
    StringBuilder b = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      if (c == '"' || c == '\\') b.append('\\').append(c);
      else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
      else b.append(c);
    }
    return b.append('"').toString();
  }

  static void walk(FileSystem fs, Path p, List<FileStatus> out) throws IOException {
    for (FileStatus st : fs.listStatus(p)) {
      if (st.isDirectory()) walk(fs, st.getPath(), out); else out.add(st);
    }
  }

  public static void main(String[] args) throws Exception {
    String out = null, only = null; boolean read = true;
    for (int i = 0; i < args.length; i++) {
      if (args[i].equals("--out")) out = args[++i];
      else if (args[i].equals("--no-read")) read = false;
      else if (args[i].equals("--path")) only = args[++i];
      else { System.err.println("unknown argument " + args[i]); System.exit(2); }
    }
    Configuration conf = new Configuration();
    DistributedFileSystem fs = (DistributedFileSystem) FileSystem.get(conf);
    Map<String, String> holders = new HashMap<>();
    List<String> leases = new ArrayList<>();
    try {
      RemoteIterator<OpenFileEntry> it = fs.listOpenFiles();
      while (it.hasNext()) {
        OpenFileEntry e = it.next();
        holders.put(e.getFilePath(), e.getClientName());
        leases.add("{\"holder\":" + q(e.getClientName()) + ",\"paths\":[" + q(e.getFilePath()) + "]}");
      }
    } catch (IOException e) {
      System.err.println("listOpenFiles: " + e);
    }
    List<FileStatus> files = new ArrayList<>();
    if (only != null) files.add(fs.getFileStatus(new Path(only))); else walk(fs, new Path("/"), files);
    StringBuilder j = new StringBuilder("{\"files\":[");
    StringBuilder rb = new StringBuilder("{");
    boolean first = true;
    for (FileStatus st : files) {
      String path = st.getPath().toUri().getPath();
      boolean closed = fs.isFileClosed(st.getPath());
      LocatedBlocks lbs = fs.getClient().getLocatedBlocks(path, 0, Long.MAX_VALUE);
      List<LocatedBlock> blocks = new ArrayList<>(lbs.getLocatedBlocks());
      LocatedBlock last = lbs.getLastLocatedBlock();
      if (last != null && (blocks.isEmpty()
          || blocks.get(blocks.size() - 1).getBlock().getBlockId() != last.getBlock().getBlockId()))
        blocks.add(last);
      long len = lbs.getFileLength();
      StringBuilder bs = new StringBuilder();
      for (int i = 0; i < blocks.size(); i++) {
        LocatedBlock lb = blocks.get(i);
        boolean isLast = i == blocks.size() - 1;
        String state = (isLast && lbs.isUnderConstruction() && !lbs.isLastBlockComplete())
            ? "UNDER_CONSTRUCTION" : "COMPLETE";
        if (isLast && lbs.isUnderConstruction() && !lbs.isLastBlockComplete())
          len += lb.getBlock().getNumBytes();
        StringBuilder locs = new StringBuilder();
        for (DatanodeInfo d : lb.getLocations()) {
          if (locs.length() > 0) locs.append(',');
          locs.append(q(d.getXferAddr()));
        }
        if (i > 0) bs.append(',');
        bs.append("{\"block\":").append(lb.getBlock().getBlockId())
          .append(",\"gs\":").append(lb.getBlock().getGenerationStamp())
          .append(",\"len\":").append(lb.getBlock().getNumBytes())
          .append(",\"state\":").append(q(state))
          .append(",\"locations\":[").append(locs).append("]}");
      }
      if (!first) { j.append(','); rb.append(','); }
      first = false;
      j.append("{\"path\":").append(q(path)).append(",\"closed\":").append(closed)
        .append(",\"len\":").append(closed ? st.getLen() : len)
        .append(",\"replication\":").append(st.getReplication())
        .append(",\"holder\":").append(q(closed ? null : holders.get(path)))
        .append(",\"blocks\":[").append(bs).append("]}");
      rb.append(q(path)).append(':');
      if (read) {
        try (FSDataInputStream in = fs.open(st.getPath())) {
          CRC32 crc = new CRC32(); byte[] buf = new byte[1 << 16]; long n = 0; int r;
          while ((r = in.read(buf)) > 0) { crc.update(buf, 0, r); n += r; }
          rb.append("{\"len\":").append(n).append(",\"crc\":").append(crc.getValue()).append('}');
        } catch (IOException e) {
          rb.append("{\"len\":null,\"crc\":null,\"error\":").append(q(e.toString())).append('}');
        }
      } else rb.append("null");
    }
    j.append("],\"leases\":[").append(String.join(",", leases)).append("],\"datanode_report\":[");
    boolean f2 = true;
    for (DatanodeReportType t : new DatanodeReportType[]{DatanodeReportType.LIVE, DatanodeReportType.DEAD}) {
      for (DatanodeInfo d : fs.getDataNodeStats(t)) {
        if (!f2) j.append(',');
        f2 = false;
        j.append("{\"xfer\":").append(q(d.getXferAddr())).append(",\"host\":").append(q(d.getHostName()))
          .append(",\"state\":").append(q(t == DatanodeReportType.LIVE ? "live" : "dead"))
          .append(",\"last_contact_ms\":").append(System.currentTimeMillis() - d.getLastUpdate()).append('}');
      }
    }
    j.append("],\"readback\":").append(rb).append("}}");
    try (Writer w = new OutputStreamWriter(new FileOutputStream(out), StandardCharsets.UTF_8)) {
      w.write(j.toString());
    }
    fs.close();
  }
}
