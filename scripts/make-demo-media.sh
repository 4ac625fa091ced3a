#!/usr/bin/env bash
# Makes the demo's pictures and movies (example-host/demo-media), which are
# committed: the demo seeds them into storage. Needs ffmpeg with libvpx and
# freetype, and the DejaVu fonts (Debian: ffmpeg, fonts-dejavu-core). Run it
# again only to change the media; the output is small by design (a few
# hundred KB in all) because the host binary embeds it.
set -euo pipefail
cd "$(dirname "$0")/../example-host/demo-media"
font=/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf
ff() { ffmpeg -hide_banner -loglevel error -y "$@"; }

# A still of a generated pattern with a label: name, source, size, label.
still() {
    local name=$1 source=$2 size=$3 label=$4
    ff -f lavfi -i "$source:size=$size" -frames:v 1 \
        -vf "drawtext=fontfile=$font:text='$label':fontcolor=white:fontsize=h/10:borderw=3:x=(w-text_w)/2:y=(h-text_h)/2" \
        -q:v 7 "$name.jpg"
}

models=(aria-vale bianca-moreau chloe-sato)
labels=("Aria Vale" "Bianca M" "Chloe Sato")
palettes=("c0=0xff6b6b:c1=0x4834d4" "c0=0x22a6b3:c1=0xf9ca24" "c0=0x6ab04c:c1=0xbe2edd")
for i in 0 1 2; do
    m=${models[$i]} l=${labels[$i]} p=${palettes[$i]}
    still "$m-avatar" "gradients=$p:seed=$((i + 1))" 256x256 "${l%% *}"
    still "$m-banner" "gradients=$p:type=linear:seed=$((i + 11))" 1200x300 "$l"
    for n in 1 2 3; do
        still "$m-photo-$n" "gradients=$p:type=radial:seed=$((i * 3 + n + 20))" 480x640 "$l $n"
    done
done

videos=(sunset-session ocean-drift city-lights morning-flow studio-diaries coming-soon)
titles=("Sunset Session" "Ocean Drift" "City Lights" "Morning Flow" "Studio Diaries" "Coming Soon")
for i in "${!videos[@]}"; do
    v=${videos[$i]} t=${titles[$i]}
    still "$v-poster" "mandelbrot=start_scale=$((2 + i)):end_pts=1" 640x360 "$t"
done

# Three short movies (6 s, 320x180, VP9 in WebM, no sound); each video of
# the demo plays one of them.
movie() {
    local name=$1 source=$2 label=$3
    ff -f lavfi -i "$source" -t 6 -r 24 \
        -vf "drawtext=fontfile=$font:text='$label %{pts\:hms}':fontcolor=white:fontsize=16:borderw=2:x=10:y=h-30" \
        -c:v libvpx-vp9 -b:v 50k -deadline good -cpu-used 4 -pix_fmt yuv420p -an "$name.webm"
}
movie movie-1 "testsrc2=size=320x180:rate=24" "Demo movie 1"
movie movie-2 "mandelbrot=size=320x180:rate=24" "Demo movie 2"
movie movie-3 "gradients=size=320x180:rate=24:speed=0.02:c0=0x6ab04c:c1=0xbe2edd:c2=0x22a6b3" "Demo movie 3"
ls -l
du -ch . | tail -1
