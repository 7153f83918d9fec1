#!/usr/bin/env bash
# Pictures of the workbook's main sheets for the README, made from the real file.
#
#   scripts/render_sheets.sh [WORKBOOK] [FOLDER]     (defaults: templates/inference-ledger.xlsx, docs/img)
#
# LibreOffice headless prints the workbook to PDF with each sheet's own print setup (the
# page header starts with the sheet's name), then pdftoppm (poppler-utils) turns the first page
# of each main sheet into FOLDER/<sheet>.png, cropped to the top of the page (the part a
# reader looks at first; HEIGHT is the share of the page kept, 0.5 by default).  What the pictures show is what a viewer that
# does not recalculate shows: the cached values and chart caches the file carries.
# DPI=70 by default (small files for the README); set DPI to change it.
set -euo pipefail
cd "$(dirname "$0")/.."
workbook=${1:-templates/inference-ledger.xlsx}
folder=${2:-docs/img}
dpi=${DPI:-70}
height=${HEIGHT:-0.5}
# a sheet may keep its own share of the page (NAME:SHARE): Forecast's charts sit under its summary
sheets=(Summary:0.85 Start Plan Memory Compute Bandwidth Scenarios Checks Forecast:0.8)

for tool in soffice pdftoppm pdftotext pdfinfo; do
    command -v "$tool" >/dev/null || { echo "render_sheets.sh: $tool is required (LibreOffice, poppler-utils)" >&2; exit 1; }
done
[[ -f $workbook ]] || { echo "render_sheets.sh: no workbook at $workbook" >&2; exit 2; }
[[ -d $folder ]] || { echo "render_sheets.sh: folder $folder does not exist" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$workbook" "$tmp/book.xlsx"
soffice --headless "-env:UserInstallation=file://$tmp/profile" --convert-to pdf --outdir "$tmp" "$tmp/book.xlsx" >/dev/null 2>&1
[[ -f $tmp/book.pdf ]] || { echo "render_sheets.sh: LibreOffice did not print $workbook" >&2; exit 1; }

info=$(pdfinfo "$tmp/book.pdf")
pages=$(awk '/^Pages:/ {print $2}' <<<"$info")
# page size in points -> the pixel box kept: full width, the top HEIGHT (or the sheet's SHARE) of the page
box() { awk -v d="$dpi" -v h="$1" '/^Page size:/ {printf "%d %d\n", $3 / 72 * d, $5 / 72 * d * h; exit}' <<<"$info"; }
# each page's header starts with its sheet's name (inference_ledger.workbook.printing): the first page of each sheet
mapfile -t names < <(python3 -c 'import sys, openpyxl; print("\n".join(openpyxl.load_workbook(sys.argv[1], read_only=True).sheetnames))' "$tmp/book.xlsx")
declare -A first
for ((p = 1; p <= pages; p++)); do
    # the header line (it ends with the version); chart text cut at the page edge may print above it
    line=$(pdftotext -layout -f "$p" -l "$p" "$tmp/book.pdf" - |
           awk '/inference-ledger [0-9]+\.[0-9]/ && !done {sub(/^ +/, ""); print; done = 1}')
    name=""
    for n in "${names[@]}"; do   # the longest sheet name the header starts with ("GPU costs" before "GPUs")
        if [[ " ${line%%inference-ledger:*} " == *" $n "* ]] && (( ${#n} > ${#name} )); then name=$n; fi
    done
    if [[ -n $name && -z ${first[$name]:-} ]]; then first[$name]=$p; fi
done
for entry in "${sheets[@]}"; do
    sheet=${entry%%:*}
    share=$height
    [[ $entry == *:* ]] && share=${entry#*:}
    read -r width_px height_px < <(box "$share")
    page=${first[$sheet]:-}
    [[ -n $page ]] || { echo "render_sheets.sh: no page headed $sheet in the PDF" >&2; exit 1; }
    out="$folder/$(tr '[:upper:]' '[:lower:]' <<<"$sheet")"
    pdftoppm -png -r "$dpi" -f "$page" -l "$page" -x 0 -y 0 -W "$width_px" -H "$height_px" -singlefile \
        "$tmp/book.pdf" "$out"
    echo "wrote $out.png (page $page)"
done
