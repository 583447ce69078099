package ingest

import "kinetoscope/ingest/jsonscan"

// argVals are the event args the model keeps, raw or parsed.
type argVals struct {
	correlation, external, bytes int64
	stream, device               int64
	hasCorr, hasStream, hasDev   bool
	grid, block                  [3]int32
	name                         []byte // args.name of metadata events
	inputDims                    []byte // args "Input Dims" (record_shapes), raw
	inputTypes, concrete         []byte // args "Input type" and "Concrete Inputs", raw
	coll                         rawColl
}

// rawColl are the collective args of an NCCL kernel or record_param_comms.
type rawColl struct {
	present                bool
	name, dtype, pg, ranks []byte
	in, out, seq, group    int64
}

// args parses the args object of ev into a, unless the event scan already
// did. The object is complete in buf: its brackets were matched while
// scanning the event.
func (s *scanner) args(ev *rawEvent, a *argVals) error {
	if ev.argsParsed {
		return nil
	}
	*a = argVals{coll: rawColl{seq: -1}}
	if ev.args < 0 {
		return nil
	}
	if _, err := s.parseArgs(ev.args, ev.class, a); err != nil {
		if err == jsonscan.ErrShort {
			return s.Syntax(ev.args, "malformed args object")
		}
		return err
	}
	return nil
}

// parseArgs parses the args object at i, of an event of class c, into a
// and returns the position after it. Members in the order Kineto writes
// them for c (argLayouts) are read without the general key parse; any
// other member is read by it.
func (s *scanner) parseArgs(i int, c category, a *argVals) (int, error) {
	*a = argVals{coll: rawColl{seq: -1}}
	layout, k := argLayouts[c], 0
	i, done, err := s.Open(i, "an args object")
	for !done && err == nil {
		var key argKey
		if j := s.layoutMember(i, layout, k); j >= 0 {
			key, i = layout[k].key, j
			k++
		} else {
			var raw []byte
			if raw, i, err = s.Key(i); err != nil {
				return 0, err
			}
			key, k = argKeyOf(raw), resync(layout, k, raw)
		}
		if i, err = s.argField(key, i, a); err != nil {
			return 0, err
		}
		i, done, err = s.After(i, "args")
	}
	return i, err
}

// layoutMember returns the position of the value of the member at i if
// its key is layout[k] (with the colon and at most one space after it, and
// a value right after those), or -1.
func (s *scanner) layoutMember(i int, layout []layoutKey, k int) int {
	if k >= len(layout) {
		return -1
	}
	b, text := s.Buf, layout[k].text
	j := i + len(text)
	if j+1 >= len(b) || string(b[i:j]) != text {
		return -1
	}
	if b[j] == ' ' {
		j++
	}
	if b[j] <= ' ' {
		return -1
	}
	return j
}

// resync returns where in layout to expect the next member after a member
// with the raw key key read by the general key parse: after key if layout
// holds it from k on, else k.
func resync(layout []layoutKey, k int, key []byte) int {
	for j := k; j < len(layout); j++ {
		if string(key) == layout[j].name {
			return j + 1
		}
	}
	return k
}

// argKey names an args key the model keeps; argOther is any other key.
type argKey uint8

const (
	argOther argKey = iota
	argCorrelation
	argExternal
	argStream
	argDevice
	argBytes
	argIn
	argOut
	argGroup
	argSeq
	argGrid
	argBlock
	argName
	argCollName
	argDtype
	argPG
	argRanks
	argInputDims
	argInputTypes
	argConcrete
)

// argKeyOf returns the argKey of a raw args key.
func argKeyOf(key []byte) argKey {
	switch string(key) {
	case "correlation":
		return argCorrelation
	case "External id":
		return argExternal
	case "stream":
		return argStream
	case "device":
		return argDevice
	case "bytes":
		return argBytes
	case "In msg nelems":
		return argIn
	case "Out msg nelems":
		return argOut
	case "Group size":
		return argGroup
	case "Seq":
		return argSeq
	case "grid":
		return argGrid
	case "block":
		return argBlock
	case "name":
		return argName
	case "Collective name":
		return argCollName
	case "dtype":
		return argDtype
	case "Process Group Name":
		return argPG
	case "Process Group Ranks":
		return argRanks
	case "Input Dims":
		return argInputDims
	case "Input type":
		return argInputTypes
	case "Concrete Inputs":
		return argConcrete
	}
	return argOther
}

// layoutKey is an args key: its name, its text (quoted, with the colon
// after it) and its argKey.
type layoutKey struct {
	name, text string
	key        argKey
}

// layoutOf returns the layoutKeys of the keys names.
func layoutOf(names ...string) []layoutKey {
	l := make([]layoutKey, len(names))
	for i, n := range names {
		l[i] = layoutKey{name: n, text: `"` + n + `":`, key: argKeyOf([]byte(n))}
	}
	return l
}

// argLayouts are the orders in which Kineto writes the args of kernels,
// runtime and driver calls, and memory copies and sets (collective
// kernels add the collective args after the kernel's own). They are never
// written after initialization.
var argLayouts = func() (t [numCategories][]layoutKey) {
	kernel := layoutOf("External id", "queued", "device", "context", "stream", "correlation",
		"registers per thread", "shared memory", "blocks per SM", "warps per SM", "grid", "block",
		"est. achieved occupancy %", "Collective name", "In msg nelems", "Out msg nelems", "Group size",
		"dtype", "In split size", "Out split size", "Process Group Name", "Process Group Description",
		"Process Group Ranks")
	runtime := layoutOf("External id", "cbid", "correlation")
	memory := layoutOf("External id", "device", "context", "stream", "correlation", "bytes",
		"memory bandwidth (GB/s)")
	t[catKernel], t[catRuntime], t[catDriver], t[catMemcpy], t[catMemset] = kernel, runtime, runtime, memory, memory
	return t
}()

// argField parses the value at i for an args key. Values of keys the
// model does not keep are only skipped.
func (s *scanner) argField(key argKey, i int, a *argVals) (int, error) {
	c := &a.coll
	switch key {
	case argCorrelation:
		return s.intArg(i, &a.correlation, &a.hasCorr)
	case argExternal:
		return s.intArg(i, &a.external, nil)
	case argStream:
		return s.intArg(i, &a.stream, &a.hasStream)
	case argDevice:
		return s.intArg(i, &a.device, &a.hasDev)
	case argBytes:
		return s.intArg(i, &a.bytes, nil)
	case argIn:
		return s.intArg(i, &c.in, nil)
	case argOut:
		return s.intArg(i, &c.out, nil)
	case argGroup:
		return s.intArg(i, &c.group, nil)
	case argSeq:
		var ok bool
		seq := c.seq
		next, err := s.intArg(i, &seq, &ok)
		if ok {
			c.seq = seq
		}
		return next, err
	case argGrid, argBlock:
		if d, e := s.launchDims(i); e >= 0 {
			if key == argGrid {
				a.grid = d
			} else {
				a.block = d
			}
			return e, nil
		}
	case argOther:
		if e := s.NumberEnd(i); e >= 0 {
			return e, nil
		}
		return s.Skip(i)
	}
	var raw []byte
	next, err := s.Value(i, &raw)
	if err != nil {
		return 0, err
	}
	switch key {
	case argGrid:
		a.grid = dims(raw)
	case argBlock:
		a.block = dims(raw)
	case argName:
		a.name = raw
	case argCollName:
		c.present, c.name = true, raw
	case argDtype:
		c.dtype = raw
	case argPG:
		c.pg = raw
	case argRanks:
		c.ranks = raw
	case argInputDims:
		a.inputDims = raw
	case argInputTypes:
		a.inputTypes = raw
	case argConcrete:
		a.concrete = raw
	}
	return next, nil
}

// intArg parses the integer value at i into dst, and sets ok (when not
// nil) to whether it was one.
func (s *scanner) intArg(i int, dst *int64, ok *bool) (int, error) {
	if v, e := s.Digits(i); e >= 0 {
		*dst = v
		if ok != nil {
			*ok = true
		}
		return e, nil
	}
	var raw []byte
	next, err := s.Value(i, &raw)
	if err != nil {
		return 0, err
	}
	v, isInt := jsonscan.ParseInt(raw)
	*dst = v
	if ok != nil {
		*ok = isInt
	}
	return next, nil
}

// dims parses a launch dimension array like [512, 1, 1].
func dims(raw []byte) [3]int32 {
	var d [3]int32
	if len(raw) < 2 || raw[0] != '[' {
		return d
	}
	k, v, in := 0, int64(0), false
	for _, c := range raw[1:] {
		switch {
		case c >= '0' && c <= '9':
			if v < 1<<31 {
				v = v*10 + int64(c-'0')
			}
			in = true
		case c == ',' || c == ']':
			if in && k < 3 {
				d[k] = int32(min(v, 1<<31-1))
			}
			k++
			v, in = 0, false
		}
	}
	return d
}

// launchDims reads the launch dimension array at i when it is three
// unsigned integers of at most nine digits, each comma followed by one
// space or none, as Kineto writes grid and block ("[512, 2, 1]"): the
// dims that Value and dims read from it, and the position after it.
// Otherwise it returns -1 for the position.
func (s *scanner) launchDims(i int) (d [3]int32, next int) {
	b := s.Buf
	if i >= len(b) || b[i] != '[' {
		return d, -1
	}
	j := i + 1
	for k := range d {
		e := jsonscan.DigitsEnd(b, j)
		if e <= j || e-j > 9 || e+1 >= len(b) {
			return d, -1
		}
		v := int32(0)
		for _, c := range b[j:e] {
			v = v*10 + int32(c-'0')
		}
		d[k] = v
		switch {
		case k == len(d)-1:
			if b[e] != ']' {
				return d, -1
			}
			return d, e + 1
		case b[e] != ',':
			return d, -1
		case b[e+1] == ' ':
			e++
		}
		j = e + 1
	}
	return d, -1
}
