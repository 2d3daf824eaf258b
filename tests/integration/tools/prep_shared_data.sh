#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# dpasync prep on the shared datasets, plus its failure modes.
#   usage: prep_shared_data.sh DPASYNC SHARED_DATA_DIR
# Checks, for every run: exit 0; the owner files' rows add up to the input's
# records; every owner file has the same header; every data cell is a finite
# number in plain decimal; classification targets are exactly -1/+1.  Then
# that a two-level column is one feature, that DIR/sample.csv is written
# exactly when there is a sample (with the owners' header and the sample's
# rows), that movielens' empty cells are an error without --drop-missing and
# its 7 rows dropped with it; that bad input (malformed CSV, unknown target,
# unreadable or invalid schema) exits non-zero with exactly one line on
# stderr, and that a seed reproduces its split byte for byte.
set -eu

if [ $# -ne 2 ]; then
	echo "usage: $0 DPASYNC SHARED_DATA_DIR" >&2
	exit 2
fi
DP=$1
DATA=$2
for f in lending_club.csv diamonds.csv diabetes.csv breast_cancer.csv movielens_ratings.csv.gz; do
	if [ ! -r "$DATA/$f" ]; then
		echo "FAIL: $DATA/$f is missing or unreadable" >&2
		exit 1
	fi
done

TMP=$(mktemp -d "${TMPDIR:-/tmp}/prep_shared.XXXXXX")
trap 'rm -rf "$TMP"' EXIT INT TERM
passed=0
failed=0

ok() {
	passed=$((passed + 1))
	echo "ok: $1"
}

bad() {
	failed=$((failed + 1))
	echo "FAIL: $1"
}

# RFC 4180 record count (quoted fields may hold newlines): count the LFs
# that end a record, i.e. those seen with an even number of quotes so far.
records() {
	awk 'BEGIN { q = 0; n = 0 }
	     { q += gsub(/"/, "\""); if (q % 2 == 0) n++ }
	     END { print n - 1 }' "$1"
}

# check_owners NAME DIR EXPECTED_ROWS BINARY(0/1)
check_owners() {
	name=$1
	dir=$2
	want=$3
	binary=$4
	if [ ! -s "$dir/schema.json" ]; then
		bad "$name: no schema.json"
		return
	fi
	total=0
	header=""
	for f in "$dir"/owner-*.csv; do
		h=$(head -n 1 "$f")
		if [ -z "$header" ]; then
			header=$h
		elif [ "$h" != "$header" ]; then
			bad "$name: $f has a different header"
			return
		fi
		# Every data cell a finite plain-decimal number, every row as wide
		# as the header; the target (last column) in {-1,1} when binary.
		# (Feature names may hold commas inside quotes, so the width is
		# taken from the first data row and compared with the header's
		# quote-aware count.)
		if ! awk -F, -v binary="$binary" -v file="$f" '
			NR == 1 {
				line = $0; n = 0; inq = 0
				for (i = 1; i <= length(line); i++) {
					c = substr(line, i, 1)
					if (c == "\"") inq = !inq
					else if (c == "," && !inq) n++
				}
				width = n + 1
				next
			}
			{
				if (NF != width) { printf "%s:%d: %d fields, header %d\n", file, NR, NF, width; exit 1 }
				for (i = 1; i <= NF; i++)
					if ($i !~ /^[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$/) {
						printf "%s:%d: field %d not a finite number: %s\n", file, NR, i, $i; exit 1
					}
				if (binary && $NF != "1" && $NF != "-1") {
					printf "%s:%d: target %s not -1/+1\n", file, NR, $NF; exit 1
				}
			}' "$f"; then
			bad "$name: $f has a bad cell"
			return
		fi
		rows=$(($(wc -l <"$f") - 1))
		if [ "$rows" -lt 1 ]; then
			bad "$name: $f has no rows"
			return
		fi
		total=$((total + rows))
	done
	if [ "$total" -ne "$want" ]; then
		bad "$name: owners hold $total rows, the input $want"
		return
	fi
	ok "$name: $total rows, all cells finite"
}

# run NAME BINARY INPUT ARGS... : prep into $TMP/NAME and check it.
run() {
	name=$1
	binary=$2
	input=$3
	shift 3
	if "$DP" prep "$@" --out "$TMP/$name" "$input" >"$TMP/$name.out" 2>"$TMP/$name.err"; then
		check_owners "$name" "$TMP/$name" "$(records "$input")" "$binary"
	else
		bad "$name: exit $? ($(cat "$TMP/$name.err"))"
	fi
}

run lending_reg 0 "$DATA/lending_club.csv" --target int_rate --drop sub_grade --split 4 --seed 3
run lending_cls 1 "$DATA/lending_club.csv" --target Class --task classification --positive good \
	--sample-frac 0.1 --all-levels --pca 10 --clamp 5 --split 5
run diamonds 0 "$DATA/diamonds.csv" --target price \
	--ordinal 'cut=Fair,Good,Very Good,Premium,Ideal' --ordinal 'color=J,I,H,G,F,E,D' \
	--ordinal 'clarity=I1,SI2,SI1,VS2,VS1,VVS2,VVS1,IF' --sample-frac 0.1 --split 8 --seed 11
run diabetes 0 "$DATA/diabetes.csv" --target target --split 3
run breast_cancer 1 "$DATA/breast_cancer.csv" --target target --task classification \
	--positive 1 --sample-frac 0.25 --split 4

# Two-level columns are one 0/1 feature named after the second level.
h=$(head -n 1 "$TMP/lending_reg/owner-1.csv")
case ",$h," in
*,term=term_60,*,Class=good,*)
	case ",$h," in
	*,term=term_36,* | *,Class=bad,*) bad "two-level columns: both levels in the header" ;;
	*) ok "two-level columns: one feature each (term=term_60, Class=good)" ;;
	esac ;;
*) bad "two-level columns: term=term_60 or Class=good missing from $h" ;;
esac

# DIR/sample.csv: the --sample-frac rows (round(0.1 * 9857) = 986), with the
# owners' header; none without a sample option.
if [ -s "$TMP/lending_cls/sample.csv" ] &&
	[ "$(($(wc -l <"$TMP/lending_cls/sample.csv") - 1))" -eq 986 ] &&
	[ "$(head -n 1 "$TMP/lending_cls/sample.csv")" = "$(head -n 1 "$TMP/lending_cls/owner-1.csv")" ]; then
	ok "sample.csv: 986 rows with the owners' header"
else
	bad "sample.csv of lending_cls missing or wrong"
fi
if [ -e "$TMP/diabetes/sample.csv" ]; then
	bad "sample.csv written without a sample option"
fi

# movielens: year is empty in 7 rows (title too, but it is dropped here).
zcat "$DATA/movielens_ratings.csv.gz" >"$TMP/movielens.csv"
if "$DP" prep --target rating --drop title,genres --split 4 --out "$TMP/ml_err" \
	"$DATA/movielens_ratings.csv.gz" >/dev/null 2>"$TMP/ml_err.err"; then
	bad "movielens: empty cells accepted without --drop-missing"
elif [ "$(wc -l <"$TMP/ml_err.err")" -eq 1 ] && grep -q "movielens_ratings.csv.gz:[0-9]*: column 'year': empty cell" "$TMP/ml_err.err"; then
	ok "movielens without --drop-missing: $(cat "$TMP/ml_err.err")"
else
	bad "movielens without --drop-missing: $(cat "$TMP/ml_err.err")"
fi
if "$DP" prep --target rating --drop title,genres --drop-missing --split 4 --out "$TMP/movielens" \
	"$DATA/movielens_ratings.csv.gz" >/dev/null 2>"$TMP/movielens.err"; then
	if [ "$(cat "$TMP/movielens.err")" = "dpasync prep: dropped 7 of 100004 rows with a missing cell in a used column" ]; then
		ok "movielens: $(cat "$TMP/movielens.err")"
	else
		bad "movielens: stderr '$(cat "$TMP/movielens.err")'"
	fi
	check_owners movielens "$TMP/movielens" $(($(records "$TMP/movielens.csv") - 7)) 0
else
	bad "movielens --drop-missing: $(cat "$TMP/movielens.err")"
fi

# Without --split every input file is one owner: feed two owner files back
# through the schema written above.
if "$DP" prep --schema "$TMP/diabetes/schema.json" --out "$TMP/reapply" \
	"$DATA/diabetes.csv" "$DATA/diabetes.csv" >/dev/null 2>"$TMP/reapply.err"; then
	check_owners reapply "$TMP/reapply" $(($(records "$DATA/diabetes.csv") * 2)) 0
	if cmp -s "$TMP/reapply/owner-1.csv" "$TMP/reapply/owner-2.csv" &&
		[ "$(head -n 1 "$TMP/reapply/owner-1.csv")" = "$(head -n 1 "$TMP/diabetes/owner-1.csv")" ]; then
		ok "reapply: existing schema gives the same features"
	else
		bad "reapply: owner files differ from each other or from the schema's features"
	fi
else
	bad "reapply: $(cat "$TMP/reapply.err")"
fi

# The same seed gives the same split, byte for byte; another seed does not.
"$DP" prep --target target --split 3 --out "$TMP/diabetes_again" "$DATA/diabetes.csv" >/dev/null
"$DP" prep --target target --split 3 --seed 2 --out "$TMP/diabetes_seed2" "$DATA/diabetes.csv" >/dev/null
if cmp -s "$TMP/diabetes/owner-2.csv" "$TMP/diabetes_again/owner-2.csv" &&
	! cmp -s "$TMP/diabetes/owner-2.csv" "$TMP/diabetes_seed2/owner-2.csv"; then
	ok "split is reproducible for a seed"
else
	bad "split is not a function of the seed"
fi

# expect_fail NAME ARGS... : non-zero exit, exactly one stderr line.
expect_fail() {
	name=$1
	shift
	if "$DP" prep "$@" >"$TMP/$name.out" 2>"$TMP/$name.err"; then
		bad "$name: exited 0"
		return
	fi
	lines=$(wc -l <"$TMP/$name.err")
	if [ "$lines" -ne 1 ]; then
		bad "$name: $lines lines on stderr"
		return
	fi
	ok "$name: $(cat "$TMP/$name.err")"
}

printf 'a,b,y\n1,2,3\n4,"5,6\n' >"$TMP/malformed.csv"
expect_fail malformed_csv --target y --out "$TMP/x1" "$TMP/malformed.csv"
printf 'a,b,y\n1,2,3\n4,5\n' >"$TMP/ragged.csv"
expect_fail ragged_csv --target y --out "$TMP/x2" "$TMP/ragged.csv"
expect_fail unknown_target --target no_such_column --out "$TMP/x3" "$DATA/diabetes.csv"
expect_fail missing_schema --schema "$TMP/no/such/schema.json" --out "$TMP/x4" "$DATA/diabetes.csv"
printf '{"version": 1, "columns": [' >"$TMP/truncated.json"
expect_fail invalid_schema --schema "$TMP/truncated.json" --out "$TMP/x5" "$DATA/diabetes.csv"
mkdir "$TMP/dir.json"
expect_fail directory_schema --schema "$TMP/dir.json" --out "$TMP/x6" "$DATA/diabetes.csv"
expect_fail bad_usage --target y --split 0 --out "$TMP/x7" "$DATA/diabetes.csv"
expect_fail exists_no_force --target target --out "$TMP/diabetes" "$DATA/diabetes.csv"
for d in x1 x2 x3 x4 x5 x6 x7; do
	if [ -e "$TMP/$d" ]; then
		bad "a failed run created $d"
	fi
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
