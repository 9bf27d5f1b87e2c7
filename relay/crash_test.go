package relay_test

func childRelay() error { return nil }
