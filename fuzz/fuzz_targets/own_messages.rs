//! Fuzz target: any bytes, as the body of a message `kafka-protocol` lacks
//! (`wire::own_messages`: UnregisterController request and response v0,
//! KIP-1312; AddRaftVoter request v0 and v1, KIP-1186), must decode or fail,
//! never panic; a decoded message encodes to bytes that decode to the same
//! message. The first byte picks the message and version, the rest is the
//! body.

#![no_main]

use kraft_controller::wire::own_messages::{
    AddRaftVoterRequestV1, UnregisterControllerRequest, UnregisterControllerResponse,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let [which, body @ ..] = data else {
        return;
    };
    match which % 4 {
        0 => {
            if let Ok(m) = UnregisterControllerRequest::decode(body, 0) {
                let again = m.encode(0).expect("a decoded request encodes");
                assert_eq!(UnregisterControllerRequest::decode(&again, 0), Ok(m));
            }
        }
        1 => {
            if let Ok(m) = UnregisterControllerResponse::decode(body, 0) {
                let again = m.encode(0).expect("a decoded response encodes");
                assert_eq!(UnregisterControllerResponse::decode(&again, 0), Ok(m));
            }
        }
        v => {
            let version = i16::from(v == 3);
            if let Ok(m) = AddRaftVoterRequestV1::decode(body, version) {
                // Unknown tagged fields are kept by kafka-protocol but not
                // re-encoded here: such a message is refused, not mangled.
                if let Ok(again) = m.encode(version) {
                    let back = AddRaftVoterRequestV1::decode(&again, version)
                        .expect("an encoded request decodes");
                    assert_eq!(back, m);
                }
            }
        }
    }
});
