import org.apache.kafka.common.metadata.*;
import org.apache.kafka.server.common.ApiMessageAndVersion;
import org.apache.kafka.metadata.MetadataRecordSerde;
import org.apache.kafka.common.protocol.*;
import org.apache.kafka.common.Uuid;
import java.nio.ByteBuffer;
import java.util.*;
String hex(org.apache.kafka.common.protocol.ApiMessage m, int v) {
  var amv = new ApiMessageAndVersion(m, (short) v);
  var cache = new ObjectSerializationCache();
  int size = MetadataRecordSerde.INSTANCE.recordSize(amv, cache);
  var buf = ByteBuffer.allocate(size);
  MetadataRecordSerde.INSTANCE.write(amv, cache, new ByteBufferAccessor(buf));
  var sb = new StringBuilder();
  for (byte b : buf.array()) sb.append(String.format("%02x", b));
  return sb.toString();
}
Uuid T = new Uuid(0x0001020304050607L, 0x08090a0b0c0d0e0fL);
Uuid D1 = new Uuid(0x1111111111111111L, 0x2222222222222222L);
Uuid D2 = new Uuid(0x3333333333333333L, 0x4444444444444444L);
System.out.println("TOPIC_V0 " + hex(new TopicRecord().setName("foo").setTopicId(T), 0));
System.out.println("REMOVE_V0 " + hex(new RemoveTopicRecord().setTopicId(T), 0));
System.out.println("CLEAR_V0 " + hex(new ClearElrRecord().setTopicName("foo"), 0));
System.out.println("CLEAR_V0_ALL " + hex(new ClearElrRecord().setTopicName(""), 0));
for (int v = 0; v <= 2; v++) {
  var p = new PartitionRecord().setPartitionId(3).setTopicId(T).setReplicas(List.of(1,2,3)).setIsr(List.of(1,2)).setLeader(1).setLeaderEpoch(5).setPartitionEpoch(7);
  if (v >= 1) p.setDirectories(List.of(D1, D2, D1));
  System.out.println("PARTITION_V" + v + "_MIN " + hex(p, v));
  var f = new PartitionRecord().setPartitionId(3).setTopicId(T).setReplicas(List.of(1,2,3)).setIsr(List.of(1)).setRemovingReplicas(List.of(3)).setAddingReplicas(List.of(4)).setLeader(1).setLeaderRecoveryState((byte)1).setLeaderEpoch(5).setPartitionEpoch(7);
  if (v >= 1) f.setDirectories(List.of(D1, D2, D1));
  if (v >= 2) f.setEligibleLeaderReplicas(List.of(2)).setLastKnownElr(List.of(3));
  System.out.println("PARTITION_V" + v + "_FULL " + hex(f, v));
  var c = new PartitionChangeRecord().setPartitionId(3).setTopicId(T).setIsr(List.of(2,3)).setLeader(2);
  System.out.println("CHANGE_V" + v + "_LEADER " + hex(c, v));
  var o = new PartitionChangeRecord().setPartitionId(3).setTopicId(T).setLeader(-1);
  System.out.println("CHANGE_V" + v + "_OFFLINE " + hex(o, v));
  var a = new PartitionChangeRecord().setPartitionId(3).setTopicId(T).setIsr(List.of(1)).setLeader(1).setReplicas(List.of(1,4)).setRemovingReplicas(List.of(2)).setAddingReplicas(List.of(4)).setLeaderRecoveryState((byte)0);
  if (v >= 1) a.setDirectories(List.of(D1, D2));
  if (v >= 2) a.setEligibleLeaderReplicas(List.of()).setLastKnownElr(List.of(2));
  System.out.println("CHANGE_V" + v + "_FULL " + hex(a, v));
}
/exit
