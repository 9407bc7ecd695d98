package number

// Scan returns the length of the decimal number at the start of s, or 0
// when s does not start with one. A number is an optional sign, digits with
// an optional fraction ("12", "1.5", "1." and ".5", at least one digit in
// all), and an optional exponent ("e-3", "E+10"), which counts only when it
// has digits: Scan("1e") is 1 and Scan("2ms") is 1. What Scan accepts,
// strconv.ParseFloat parses.
func Scan(s string) int {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	digits := 0
	for i < len(s) && isDigit(s[i]) {
		i++
		digits++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && isDigit(s[i]) {
			i++
			digits++
		}
	}
	if digits == 0 {
		return 0
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		j := i + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		k := j
		for k < len(s) && isDigit(s[k]) {
			k++
		}
		if k > j {
			i = k
		}
	}
	return i
}

// Valid reports whether all of s is one number as [Scan] reads it.
func Valid(s string) bool {
	n := Scan(s)
	return n > 0 && n == len(s)
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
