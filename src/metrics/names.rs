pub const FOURLW_MNTR_DROPPED_KEYS: &str = "zookeeper_fourlw_mntr_dropped_keys";
