package mlxc

func init() {
	fakeThread, fakeGoroutine = osThread, goroutineID
}

// fake is the test's name for the fake table.
type fake = Fake

// newFakeLib makes a Lib over a fake table, initialised as Open does.
func newFakeLib() (*Lib, *fake) {
	l, f := NewFake()
	return l, f
}
