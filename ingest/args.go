package ingest

// argVals are the event args the model keeps, raw or parsed.
type argVals struct {
	correlation, external, bytes int64
	stream, device               int64
	hasCorr, hasStream, hasDev   bool
	grid, block                  [3]int32
	name                         []byte // args.name of metadata events
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
	if _, err := s.parseArgs(ev.args, a); err != nil {
		if err == errShort {
			return s.syntax(ev.args, "malformed args object")
		}
		return err
	}
	return nil
}

// parseArgs parses the args object at i into a and returns the position
// after it.
func (s *scanner) parseArgs(i int, a *argVals) (int, error) {
	*a = argVals{coll: rawColl{seq: -1}}
	i, done, err := s.open(i, "an args object")
	for !done && err == nil {
		var key []byte
		if key, i, err = s.key(i); err != nil {
			return 0, err
		}
		if i, err = s.argField(key, i, a); err != nil {
			return 0, err
		}
		i, done, err = s.after(i, "args")
	}
	return i, err
}

// argField parses the value at i for an args key. Values of keys the
// model does not keep are only skipped.
func (s *scanner) argField(key []byte, i int, a *argVals) (int, error) {
	c := &a.coll
	switch string(key) {
	case "correlation":
		return s.intArg(i, &a.correlation, &a.hasCorr)
	case "External id":
		return s.intArg(i, &a.external, nil)
	case "stream":
		return s.intArg(i, &a.stream, &a.hasStream)
	case "device":
		return s.intArg(i, &a.device, &a.hasDev)
	case "bytes":
		return s.intArg(i, &a.bytes, nil)
	case "In msg nelems":
		return s.intArg(i, &c.in, nil)
	case "Out msg nelems":
		return s.intArg(i, &c.out, nil)
	case "Group size":
		return s.intArg(i, &c.group, nil)
	case "Seq":
		var ok bool
		seq := c.seq
		next, err := s.intArg(i, &seq, &ok)
		if ok {
			c.seq = seq
		}
		return next, err
	case "grid", "block", "name", "Collective name", "dtype", "Process Group Name", "Process Group Ranks":
	default:
		return s.skip(i)
	}
	var raw []byte
	next, err := s.argValue(i, &raw)
	if err != nil {
		return 0, err
	}
	switch string(key) {
	case "grid":
		a.grid = dims(raw)
	case "block":
		a.block = dims(raw)
	case "name":
		a.name = raw
	case "Collective name":
		c.present, c.name = true, raw
	case "dtype":
		c.dtype = raw
	case "Process Group Name":
		c.pg = raw
	case "Process Group Ranks":
		c.ranks = raw
	}
	return next, nil
}

// intArg parses the integer value at i into dst, and sets ok (when not
// nil) to whether it was one.
func (s *scanner) intArg(i int, dst *int64, ok *bool) (int, error) {
	var raw []byte
	next, err := s.argValue(i, &raw)
	if err != nil {
		return 0, err
	}
	v, isInt := parseInt(raw)
	*dst = v
	if ok != nil {
		*ok = isInt
	}
	return next, nil
}

// argValue scans any value at i: a string's raw content, or the text of a
// literal, array or object.
func (s *scanner) argValue(i int, raw *[]byte) (int, error) {
	if i < len(s.buf) {
		switch s.buf[i] {
		case '"':
			r, next, err := s.str(i)
			*raw = r
			return next, err
		case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			r, next, err := s.literal(i)
			*raw = r
			return next, err
		}
	}
	next, err := s.skip(i)
	if err != nil {
		return 0, err
	}
	*raw = s.buf[i:next]
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
