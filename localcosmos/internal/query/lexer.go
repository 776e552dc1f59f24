package query

import (
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// tokKind classifies a lexical token.
type tokKind int

const (
	tEOF tokKind = iota
	tIdent
	tKeyword // Cosmos keyword; tok.text holds its upper-case spelling
	tNumber
	tString
	tParam
	tPunct // operators and punctuation; tok.text holds the symbol
)

type token struct {
	kind tokKind
	text string  // identifier name, keyword (upper case), param name with '@', symbol
	str  string  // decoded value of a string literal
	num  float64 // value of a number literal
	sp   span    // byte offsets into the query text
}

// span is a half-open byte range in the query text, reported to clients in
// the "location" of compilation errors.
type span struct{ start, end int }

// keywords lists the reserved words of the Cosmos NoSQL grammar (the grammar
// the .NET SDK ships in Microsoft.Azure.Cosmos/src/Query/Core/Parser/sql.g4).
// They match case-insensitively and cannot be used as identifiers, which is
// why the real service rejects "c.value" or "c.order" and users must write
// c["value"]. ALL, FIRST and LAST are keywords that the grammar still accepts
// as identifiers; they are handled in the parser.
var keywords = map[string]bool{
	"ALL": true, "AND": true, "ARRAY": true, "AS": true, "ASC": true, "BETWEEN": true, "BY": true,
	"DESC": true, "DISTINCT": true, "ESCAPE": true, "EXISTS": true, "FIRST": true, "FROM": true,
	"GROUP": true, "IN": true, "JOIN": true, "LAST": true, "LEFT": true, "LIKE": true, "LIMIT": true,
	"NOT": true, "OFFSET": true, "OR": true, "ORDER": true, "RANK": true, "RIGHT": true,
	"SELECT": true, "TOP": true, "VALUE": true, "WHERE": true,
}

// caseSensitiveKeywords are keywords that the grammar defines in lower case
// only: "true", "false", "null", "undefined" and "udf". Spelled any other way
// ("TRUE", "Null") they are ordinary identifiers, so "c.x = TRUE" fails to
// resolve the identifier TRUE on the real service, and so it does here.
var caseSensitiveKeywords = map[string]string{
	"true": "TRUE", "false": "FALSE", "null": "NULL", "undefined": "UNDEFINED", "udf": "UDF",
}

// punctuation, longest first so that the lexer takes the longest match.
var punctuation = []string{
	">>>", "<<", ">>", "<=", ">=", "!=", "<>", "||", "??",
	"*", ",", ".", "(", ")", "[", "]", "{", "}", ":", "?", "=", "<", ">",
	"+", "-", "/", "%", "|", "&", "^", "~",
}

// lex splits the query text into tokens. It returns a syntax error for
// characters that cannot start a token and for malformed literals.
func lex(src string) ([]token, error) {
	var toks []token
	i := 0
	for i < len(src) {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			i++
			continue
		case isIdentStart(c):
			j := i + 1
			for j < len(src) && isIdentPart(src[j]) {
				j++
			}
			word := src[i:j]
			sp := span{i, j}
			if kw, ok := caseSensitiveKeywords[word]; ok {
				toks = append(toks, token{kind: tKeyword, text: kw, sp: sp})
			} else if up := strings.ToUpper(word); keywords[up] {
				toks = append(toks, token{kind: tKeyword, text: up, sp: sp})
			} else {
				toks = append(toks, token{kind: tIdent, text: word, sp: sp})
			}
			i = j
			continue
		case c == '@':
			j := i + 1
			if j < len(src) && isIdentStart(src[j]) {
				j++
				for j < len(src) && isIdentPart(src[j]) {
					j++
				}
				toks = append(toks, token{kind: tParam, text: src[i:j], sp: span{i, j}})
				i = j
				continue
			}
			return nil, syntaxError(span{i, i + 1}, "@")
		case isDigit(c) || (c == '.' && i+1 < len(src) && isDigit(src[i+1])):
			j := scanNumber(src, i)
			v, err := strconv.ParseFloat(src[i:j], 64)
			if err != nil {
				return nil, syntaxError(span{i, j}, src[i:j])
			}
			toks = append(toks, token{kind: tNumber, text: src[i:j], num: v, sp: span{i, j}})
			i = j
			continue
		case c == '\'' || c == '"':
			s, j, err := scanString(src, i)
			if err != nil {
				return nil, err
			}
			toks = append(toks, token{kind: tString, text: src[i:j], str: s, sp: span{i, j}})
			i = j
			continue
		}
		matched := false
		for _, p := range punctuation {
			if strings.HasPrefix(src[i:], p) {
				toks = append(toks, token{kind: tPunct, text: p, sp: span{i, i + len(p)}})
				i += len(p)
				matched = true
				break
			}
		}
		if !matched {
			_, n := utf8.DecodeRuneInString(src[i:])
			return nil, syntaxError(span{i, i + n}, src[i:i+n])
		}
	}
	toks = append(toks, token{kind: tEOF, sp: span{len(src), len(src)}})
	return toks, nil
}

func isIdentStart(c byte) bool { return c == '_' || (c|0x20 >= 'a' && c|0x20 <= 'z') }
func isIdentPart(c byte) bool  { return isIdentStart(c) || isDigit(c) }
func isDigit(c byte) bool      { return c >= '0' && c <= '9' }

// scanNumber returns the end of the numeric literal starting at i:
// DIGIT+ ('.' DIGIT*)? (E [+-]? DIGIT+)? or '.' DIGIT+ (E ...)?, as in the grammar.
// A sign is not part of the literal here; unary minus is folded by the parser.
func scanNumber(src string, i int) int {
	j := i
	for j < len(src) && isDigit(src[j]) {
		j++
	}
	if j < len(src) && src[j] == '.' {
		j++
		for j < len(src) && isDigit(src[j]) {
			j++
		}
	}
	if j < len(src) && (src[j] == 'e' || src[j] == 'E') {
		k := j + 1
		if k < len(src) && (src[k] == '+' || src[k] == '-') {
			k++
		}
		if k < len(src) && isDigit(src[k]) {
			for k < len(src) && isDigit(src[k]) {
				k++
			}
			j = k
		}
	}
	return j
}

// scanString decodes a single- or double-quoted string literal starting at i
// and returns its value and the offset just past the closing quote. Escapes
// are JSON's (\" \\ \/ \b \f \n \r \t \uXXXX) plus \' ; raw control
// characters are not allowed inside literals, as in the grammar.
func scanString(src string, i int) (string, int, error) {
	quote := src[i]
	var b strings.Builder
	j := i + 1
	for {
		if j >= len(src) {
			return "", 0, syntaxError(span{i, len(src)}, src[i:])
		}
		c := src[j]
		switch {
		case c == quote:
			return b.String(), j + 1, nil
		case c < 0x20:
			return "", 0, syntaxError(span{i, j + 1}, src[i:j+1])
		case c == '\\':
			if j+1 >= len(src) {
				return "", 0, syntaxError(span{i, len(src)}, src[i:])
			}
			e := src[j+1]
			j += 2
			switch e {
			case '"', '\'', '\\', '/':
				b.WriteByte(e)
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'u':
				r, ok := hex4(src, j)
				if !ok {
					return "", 0, syntaxError(span{j - 2, min(j+4, len(src))}, src[j-2:min(j+4, len(src))])
				}
				j += 4
				// Combine a UTF-16 surrogate pair written as two \u escapes.
				if utf16.IsSurrogate(r) && j+6 <= len(src) && src[j] == '\\' && src[j+1] == 'u' {
					if r2, ok := hex4(src, j+2); ok {
						if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
							r = dec
							j += 6
						}
					}
				}
				b.WriteRune(r)
			default:
				return "", 0, syntaxError(span{j - 2, j}, src[j-2:j])
			}
		default:
			b.WriteByte(c)
			j++
		}
	}
}

func hex4(src string, j int) (rune, bool) {
	if j+4 > len(src) {
		return 0, false
	}
	v, err := strconv.ParseUint(src[j:j+4], 16, 32)
	if err != nil {
		return 0, false
	}
	return rune(v), true
}

// syntaxError is the service's SC1001 error for the token at sp.
func syntaxError(sp span, near string) *Error {
	return scError("SC1001", sp, "Syntax error, incorrect syntax near '"+near+"'.")
}
