package ingest

// StrID identifies a string in a trace's Strings table. The zero StrID is the
// empty string.
type StrID uint32

// Strings interns strings: each distinct string is stored once and named by a
// small id, so that event records hold no pointers.
type Strings struct {
	ids  map[string]StrID
	strs []string
	size int64
}

// NewStrings returns a table holding only the empty string, as id 0.
func NewStrings() *Strings {
	return &Strings{ids: map[string]StrID{"": 0}, strs: []string{""}}
}

// Intern returns the id of s, adding it if it is new.
func (s *Strings) Intern(str string) StrID {
	if id, ok := s.ids[str]; ok {
		return id
	}
	id := StrID(len(s.strs))
	s.strs = append(s.strs, str)
	s.ids[str] = id
	s.size += int64(len(str))
	return id
}

// InternBytes is Intern for a byte slice; it allocates only for a new string.
func (s *Strings) InternBytes(b []byte) StrID {
	if id, ok := s.ids[string(b)]; ok { // no allocation: the compiler special-cases this lookup
		return id
	}
	return s.Intern(string(b))
}

// Lookup returns the id of str and whether it is in the table.
func (s *Strings) Lookup(str string) (StrID, bool) {
	id, ok := s.ids[str]
	return id, ok
}

// Get returns the string named by id.
func (s *Strings) Get(id StrID) string { return s.strs[id] }

// Len returns the number of distinct strings, the empty one included.
func (s *Strings) Len() int { return len(s.strs) }

// Bytes returns the total length of the distinct strings.
func (s *Strings) Bytes() int64 { return s.size }
