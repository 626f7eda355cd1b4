# SPDX-License-Identifier: LGPL-2.1-or-later
# Throughput against frame size, one line per path (bench/paths.sh).
# gnuplot -e "datafile='DIR/paths.dat'; outfile='DIR/paths.png'; subtitle='...'" bench/paths.gp
# The data file: "bytes perftest bench cli cli2 gst tcp" per line, Gb/s, NaN for a path not run.
set terminal pngcairo size 820,560 font "sans,10"
set output outfile
set title "rdmastream paths against ib\\_write\\_bw and GStreamer TCP\n{/*0.8 ".subtitle."}"
set logscale x 2
set xlabel "frame size (bytes)"
set ylabel "Gb/s"
set yrange [0:*]
set offsets 0, 0, graph 0.35, 0
set xrange [40000:20000000]
set xtics ("64 KiB" 65536, "1080p I420" 3110400, "4K I420" 12441600)
set grid ytics
set key inside left top box opaque
set datafile missing "NaN"
plot datafile using 1:2 with linespoints lw 3 dt 2 pt 7 lc rgb "black" title "ib\\_write\\_bw (ceiling)", \
     ''       using 1:3 with linespoints lw 2 pt 5 lc rgb "#1f77b4" title "rdmastream-bench", \
     ''       using 1:4 with linespoints lw 2 pt 9 lc rgb "#2ca02c" title "rdmasend -> rdmarecv", \
     ''       using 1:5 with linespoints lw 2 dt 4 pt 9 lc rgb "#9467bd" title "rdmasend -> rdmarecv, two paths", \
     ''       using 1:6 with linespoints lw 2 pt 11 lc rgb "#d62728" title "rdmasink -> rdmasrc", \
     ''       using 1:7 with linespoints lw 2 dt 3 pt 13 lc rgb "#7f7f7f" title "TCP (tcpclientsink -> tcpserversrc)"
