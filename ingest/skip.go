package ingest

// skipRest skips the rest of an object from i, a position inside it at
// nesting depth 1 and outside any string, and returns the position after
// its closing brace. It only balances braces outside strings: it is for the
// bodies of events the reader drops, where speed matters more than checking
// every byte. Outside strings it goes byte by byte (the stretches are
// short); inside strings it looks for the closing quote eight bytes at a
// time and checks the bytes before it for escaping backslashes.
func (s *scanner) skipRest(i int) (int, error) {
	b := s.buf
	depth := 1
	for i < len(b) {
		switch b[i] {
		case '"':
			end := closingQuote(b, i+1)
			if end < 0 {
				return 0, errShort
			}
			i = end
		case '{':
			depth++
		case '}':
			if depth--; depth == 0 {
				return i + 1, nil
			}
		}
		i++
	}
	return 0, errShort
}

// closingQuote returns the position of the quote that ends the string whose
// content starts at j, or -1 if b ends first.
func closingQuote(b []byte, j int) int {
	for {
		q := indexQuote(b, j)
		if q < 0 {
			return -1
		}
		if b[q-1] != '\\' {
			return q
		}
		n := 0
		for p := q - 1; b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return q
		}
		j = q + 1
	}
}
