use super::*;

const T: Uuid = Uuid::from_u128(7);

fn framed(value: Bytes) -> FramedRecord {
    FramedRecord::decode(&value).expect("frame")
}

fn topic() -> FramedRecord {
    framed(
        TopicRecord {
            name: "foo".into(),
            topic_id: T,
        }
        .encode_framed(),
    )
}

fn partition(id: i32) -> FramedRecord {
    framed(
        PartitionRecord {
            partition_id: id,
            topic_id: T,
            replicas: vec![1, 2, 3],
            isr: vec![1, 2, 3],
            leader: 1,
            leader_epoch: 0,
            partition_epoch: 0,
            ..PartitionRecord::default()
        }
        .encode_framed(0),
    )
}

#[test]
fn records_create_change_and_remove_topics_as_kafkas_topics_delta() {
    let mut image = TopicsImage::default();
    image.apply(&topic()).expect("topic");
    image.apply(&partition(0)).expect("partition");
    image.apply(&partition(1)).expect("partition");
    assert_eq!(image.partition_count(), 2);
    let p = &image.by_name("foo").expect("foo").partitions[&0];
    assert_eq!(p.directories, vec![DIRECTORY_MIGRATING; 3]);
    assert_eq!(image.preferred_replica_imbalance_count(), 0);

    let mut change = PartitionChangeRecord::new(T, 0);
    change.isr = Some(vec![2, 3]);
    change.leader = 2;
    image
        .apply(&framed(change.encode_framed(2)))
        .expect("change");
    let p = &image.get(&T).expect("by id").partitions[&0];
    assert_eq!((p.leader, p.leader_epoch, p.partition_epoch), (2, 1, 1));
    assert_eq!(p.isr, vec![2, 3]);
    assert_eq!(image.preferred_replica_imbalance_count(), 1);

    // An ISR change alone keeps the leader epoch and bumps the partition epoch.
    let mut shrink = PartitionChangeRecord::new(T, 0);
    shrink.isr = Some(vec![2]);
    image
        .apply(&framed(shrink.encode_framed(2)))
        .expect("change");
    let p = &image.get(&T).expect("by id").partitions[&0];
    assert_eq!((p.leader, p.leader_epoch, p.partition_epoch), (2, 1, 2));

    let mut offline = PartitionChangeRecord::new(T, 1);
    offline.leader = NO_LEADER;
    image
        .apply(&framed(offline.encode_framed(2)))
        .expect("change");
    assert_eq!(image.offline_partition_count(), 1);

    image
        .apply(&framed(RemoveTopicRecord { topic_id: T }.encode_framed()))
        .expect("remove");
    assert!(image.is_empty());
    assert!(image.by_name("foo").is_none());
}

#[test]
fn records_naming_unknown_topics_or_partitions_are_errors_and_change_nothing() {
    let mut image = TopicsImage::default();
    assert_eq!(
        image.apply(&partition(0)),
        Err(TopicRecordError::UnknownTopicId(T))
    );
    image.apply(&topic()).expect("topic");
    assert!(matches!(
        image.apply(&topic()),
        Err(TopicRecordError::Duplicate { .. })
    ));
    let before = image.clone();
    let change = PartitionChangeRecord::new(T, 5);
    assert_eq!(
        image.apply(&framed(change.encode_framed(0))),
        Err(TopicRecordError::UnknownPartition {
            topic_id: T,
            partition_id: 5
        })
    );
    assert_eq!(
        image.apply(&framed(
            ClearElrRecord {
                topic_name: "bar".into()
            }
            .encode_framed()
        )),
        Err(TopicRecordError::UnknownTopicName("bar".into()))
    );
    assert_eq!(image, before);
}

#[test]
fn clear_elr_empties_elr_and_the_image_records_rebuild_it() {
    let mut image = TopicsImage::default();
    image.apply(&topic()).expect("topic");
    image.apply(&partition(0)).expect("partition");
    let mut change = PartitionChangeRecord::new(T, 0);
    change.eligible_leader_replicas = Some(vec![3]);
    change.last_known_elr = Some(vec![2]);
    image
        .apply(&framed(change.encode_framed(2)))
        .expect("change");
    image.apply(&partition(1)).expect("a partition without ELR");
    let mut rebuilt = TopicsImage::default();
    for r in image.records(2) {
        rebuilt.apply(&framed(r)).expect("applies");
    }
    assert_eq!(rebuilt, image);
    let epochs = |image: &TopicsImage| -> Vec<i32> {
        let t = image.get(&T).expect("topic");
        t.partitions.values().map(|p| p.partition_epoch).collect()
    };
    let before = epochs(&image);
    image
        .apply(&framed(
            ClearElrRecord {
                topic_name: String::new(),
            }
            .encode_framed(),
        ))
        .expect("clear");
    let p = &image.get(&T).expect("topic").partitions[&0];
    assert!(p.elr.is_empty() && p.last_known_elr.is_empty());
    // Kafka merges an empty-ELR change: a new partition epoch where the
    // ELR was not empty, none elsewhere.
    assert_eq!(epochs(&image), vec![before[0] + 1, before[1]]);
}
