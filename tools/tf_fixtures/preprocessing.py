"""Preprocessing graphs as input pipelines write them (family `preprocessing`): CSV lines and
serialized tf.Examples turned into model-ready tensors with tf.io / tf.strings / tf.lookup."""
import itertools
import uuid
from unittest import mock

import numpy as np

from .ops_strings import _example
from .registry import case
from .tf_v1 import tf

_COUNTRIES = ["de", "fr", "jp", "us"]


@case("preprocessing_csv_example", "preprocessing",
      "A CSV + tf.Example input pipeline: tf.io.decode_csv of user rows; an income column "
      "cleaned by tf.strings.regex_replace ('$' and thousands separators) and read by "
      "tf.strings.to_number; countries lower-cased, stripped and mapped to ids by a "
      "tf.lookup.StaticVocabularyTable (KeyValueTensorInitializer, 2 OOV hash buckets) and a "
      "StaticHashTable; user ids hashed into buckets; tf.io.parse_example of a batch of Examples "
      "(dense, sparse, ragged); everything combined into a float feature matrix and a linear "
      "score. The lookups depend on the table initializers, so one run does everything.",
      rtol=1e-5, atol=1e-5)
def preprocessing_csv_example(b):
    lines = b.placeholder("lines", np.array([
        b'u17,DE ,34,"$52,000.50",1', b'u02, fr,27,$880,0', b'u99,JP,,"$1,234,567",1',
        b'u17,br,45,$0.99,0', b'u05,US,61,"$12,000",1']), shape=[None])
    user, country, age, income, label = tf.io.decode_csv(
        lines, record_defaults=[[""], [""], [30.0], [""], [0]], name="decode_csv")
    dollars = tf.strings.to_number(tf.strings.regex_replace(income, r"[$,]", ""), tf.float32,
                                   name="income_number")
    country = tf.strings.lower(tf.strings.strip(country), name="country_clean")
    # StaticHashTable names its shared table "hash_table_<uuid4>"; counted uuids keep the
    # fixture reproducible (the names stay as unique as TensorFlow makes them).
    counter = itertools.count(1)
    with mock.patch.object(uuid, "uuid4", lambda: uuid.UUID(int=next(counter))):
        vocab = tf.lookup.StaticVocabularyTable(
            tf.lookup.KeyValueTensorInitializer(_COUNTRIES, tf.range(len(_COUNTRIES), dtype=tf.int64)),
            num_oov_buckets=2, name="country_vocab")
        exact = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(["de", "us"], [1.0, 2.0]), default_value=0.0, name="region")
    with tf.control_dependencies([vocab._table.initializer, exact.initializer]):
        country_id = tf.identity(vocab.lookup(country), name="country_id")
        region = tf.identity(exact.lookup(country), name="region_weight")
    user_bucket = tf.strings.to_hash_bucket_fast(user, 16, name="user_bucket")
    serialized = b.placeholder("examples", np.array([
        _example(clicks=[3], history=[0.5, 1.5], tags=["a", "b"], terms=["x"]),
        _example(history=[2.0, 0.0], tags=["c"], terms=np.array([], "S")),
        _example(clicks=[9], history=[1.0, 1.0], terms=["y", "z", "w"]),
        _example(clicks=[1], history=[0.0, 4.0], tags=["a"]),
        _example(clicks=[0], history=[3.0, 3.0]),
    ]), shape=[None])
    parsed = tf.io.parse_example(serialized, {
        "clicks": tf.io.FixedLenFeature([], tf.int64, default_value=0),
        "history": tf.io.FixedLenFeature([2], tf.float32),
        "tags": tf.io.VarLenFeature(tf.string),
        "terms": tf.io.RaggedFeature(tf.string),
    })
    tag_count = tf.math.unsorted_segment_sum(tf.ones_like(parsed["tags"].values, tf.float32),
                                             parsed["tags"].indices[:, 0], tf.size(serialized))
    term_count = tf.cast(parsed["terms"].row_lengths(), tf.float32)
    features = tf.concat([
        tf.one_hot(country_id, len(_COUNTRIES) + 2),
        tf.one_hot(user_bucket, 16),
        tf.stack([age / 100.0, tf.math.log1p(dollars), region, tf.cast(parsed["clicks"], tf.float32),
                  tag_count, term_count], axis=1),
        parsed["history"],
    ], axis=1, name="features")
    weights = tf.constant(b.normal(6 + 16 + 6 + 2, 1), name="weights")
    for tensor, name in ((features, "features"), (country_id, "country_id"), (region, "region_weight"),
                         (user_bucket, "user_bucket"), (label, None), (dollars, None)):
        b.fetch(tensor, name)
    b.fetch(tf.matmul(features, weights, name="score"))
    b.variant("second", lines=np.array([b'a,de,1,$1,1']), examples=np.array([_example(history=[1.0, 2.0])]))
