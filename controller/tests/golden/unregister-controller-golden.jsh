// Golden bytes for issue 22 (KIP-1312 UnregisterController, KIP-1186
// AddRaftVoter v1), produced by Kafka 4.4.0's own generated classes:
//   jshell --class-path "$(cat ~/.cache/kraftwerk/kafka-4.4.0.classpath)" \
//     controller/tests/golden/unregister-controller-golden.jsh
// The hex strings are pasted into the Rust tests that cite this script.
import org.apache.kafka.common.metadata.*;
import org.apache.kafka.common.message.*;
import org.apache.kafka.server.common.ApiMessageAndVersion;
import org.apache.kafka.metadata.MetadataRecordSerde;
import org.apache.kafka.common.protocol.*;
import org.apache.kafka.common.Uuid;
import java.nio.ByteBuffer;
import java.util.*;
String hexOf(ByteBuffer buf) {
  var sb = new StringBuilder();
  for (byte b : buf.array()) sb.append(String.format("%02x", b));
  return sb.toString();
}
// A metadata record as the log stores it (ApiMessageAndVersion framing).
String record(ApiMessage m, int v) {
  var amv = new ApiMessageAndVersion(m, (short) v);
  var cache = new ObjectSerializationCache();
  int size = MetadataRecordSerde.INSTANCE.recordSize(amv, cache);
  var buf = ByteBuffer.allocate(size);
  MetadataRecordSerde.INSTANCE.write(amv, cache, new ByteBufferAccessor(buf));
  return hexOf(buf);
}
// A message body alone (no header), at version v.
String body(Message m, int v) {
  var cache = new ObjectSerializationCache();
  int size = m.size(cache, (short) v);
  var buf = ByteBuffer.allocate(size);
  m.write(new ByteBufferAccessor(buf), cache, (short) v);
  return hexOf(buf);
}
System.out.println("API_KEY " + ApiKeys.UNREGISTER_CONTROLLER.id + " " + ApiKeys.UNREGISTER_CONTROLLER.oldestVersion() + "-" + ApiKeys.UNREGISTER_CONTROLLER.latestVersion() + " listeners=" + ApiKeys.UNREGISTER_CONTROLLER.inScope(org.apache.kafka.common.message.ApiMessageType.ListenerType.CONTROLLER) + "/" + ApiKeys.UNREGISTER_CONTROLLER.inScope(org.apache.kafka.common.message.ApiMessageType.ListenerType.BROKER) + " forwardable=" + ApiKeys.UNREGISTER_CONTROLLER.forwardable);
System.out.println("ADD_VOTER_VERSIONS " + ApiKeys.ADD_RAFT_VOTER.oldestVersion() + "-" + ApiKeys.ADD_RAFT_VOTER.latestVersion());
System.out.println("ERROR CONTROLLER_ID_NOT_REGISTERED " + Errors.CONTROLLER_ID_NOT_REGISTERED.code());
System.out.println("RECORD_29_V0 " + record(new UnregisterControllerRecord().setControllerId(3000), 0));
System.out.println("REQUEST_V0 " + body(new UnregisterControllerRequestData().setControllerId(3000), 0));
System.out.println("RESPONSE_V0_OK " + body(new UnregisterControllerResponseData().setThrottleTimeMs(0).setErrorCode((short) 0).setErrorMessage(null), 0));
System.out.println("RESPONSE_V0_ERR " + body(new UnregisterControllerResponseData().setThrottleTimeMs(7).setErrorCode(Errors.CONTROLLER_ID_NOT_REGISTERED.code()).setErrorMessage("no"), 0));
var listeners = new AddRaftVoterRequestData.ListenerCollection();
listeners.add(new AddRaftVoterRequestData.Listener().setName("CONTROLLER").setHost("c-4").setPort(9093));
for (int v = 0; v <= 1; v++) {
  for (boolean ack : new boolean[] {true, false}) {
    if (v == 0 && !ack) continue;
    var r = new AddRaftVoterRequestData().setClusterId("AAECAwQFBgcICQoLDA0ODw").setTimeoutMs(30000).setVoterId(4)
      .setVoterDirectoryId(new Uuid(0x1111111111111111L, 0x2222222222222222L)).setListeners(listeners.duplicate()).setAckWhenCommitted(ack);
    System.out.println("ADD_VOTER_V" + v + "_ACK_" + ack + " " + body(r, v));
  }
  System.out.println("ADD_VOTER_RESPONSE_V" + v + " " + body(new AddRaftVoterResponseData().setErrorCode((short) 0).setErrorMessage(null), v));
}
/exit
