# SPDX-License-Identifier: LGPL-2.1-or-later
# Each add_test() test's timeout: three times what it took in a full
# scripts/test.sh on a 2-core machine without KVM, at least 30 s (60 s on
# the RDMA bed; FLOORS). Written by scripts/test-timeouts.py; rdmastream_timeouts()
# (tests/CMakeLists.txt) applies it in each folder. A test not listed
# keeps the timeout its own CMakeLists.txt gives it. rdmastream_timeouts()
# also gives each a COST of a third of it (its measured time): ctest starts
# the costliest first when it has no record of its own (a fresh clone).
set(RDMASTREAM_TEST_TIMEOUTS
  cli.bad_flags 30
  cli.bad_input 30
  cli.make_clips 30
  gst.guest_registry 30
  package.build 120
  package.by_hand 120
  package.contents 120
  package.install 120
  rdma.bed_jobs_apart.one 60
  rdma.cli_bad_setups.one 166
  rdma.cli_fanout.one 129
  rdma.cli_fanout_admission.one 148
  rdma.cli_fanout_stuck_member_cut.one 99
  rdma.cli_frame_above_limit.one 112
  rdma.cli_framemd5_codecs.one 110
  rdma.cli_framemd5_copy_path.one 85
  rdma.cli_framemd5_more_codecs.one 221
  rdma.cli_framemd5_pix_fmt.one 60
  rdma.cli_framemd5_resolution_change.one 60
  rdma.cli_hostile_layout.one 121
  rdma.cli_key_auth.one 515
  rdma.cli_live_copies.one 97
  rdma.cli_loop_reverse.one 60
  rdma.cli_metrics.one 300
  rdma.cli_outputs.one 250
  rdma.cli_receiver_leaves.one 60
  rdma.cli_short_frame.one 114
  rdma.device_by_name.one 60
  rdma.device_removed.one 60
  rdma.device_unknown.one 60
  rdma.fanout_leave_and_join.one 61
  rdma.fanout_stuck_member_cut.one 60
  rdma.fanout_three_one_slow.one 60
  rdma.fault_bad_hello.one 71
  rdma.fault_corrupt_payload.one 60
  rdma.fault_held_slot_no_windows.one 60
  rdma.fault_held_slot_windows.one 60
  rdma.fault_stale_generation.one 60
  rdma.fault_wrong_imm.one 60
  rdma.fault_wrong_rkey.one 60
  rdma.format_change_grows_ring.one 60
  rdma.gst_caps_change.one 60
  rdma.gst_copy_path.one 60
  rdma.gst_frame_above_limit.one 60
  rdma.gst_from_rdmasend.one 81
  rdma.gst_holding_downstream.one 77
  rdma.gst_hostile_layout.one 60
  rdma.gst_i420.one 60
  rdma.gst_i420_10le.one 60
  rdma.gst_jpeg.one 60
  rdma.gst_key_file.one 60
  rdma.gst_key_mismatch.one 345
  rdma.gst_key_missing.one 348
  rdma.gst_nv12.one 60
  rdma.gst_playbin_from_rdmasend.one 104
  rdma.gst_rdmasrc_device_removed.one 60
  rdma.gst_rdmasrc_link_down.one 60
  rdma.gst_receiver_killed.one 60
  rdma.gst_receiver_leaves.one 60
  rdma.gst_restart.one 60
  rdma.gst_rgba.one 60
  rdma.gst_rogue_receiver.one 69
  rdma.gst_sender_killed.one 60
  rdma.gst_sender_stopped.one 60
  rdma.gst_short_frame.one 60
  rdma.gst_slow_receiver_lossless.one 60
  rdma.gst_to_rdmarecv.one 60
  rdma.gst_to_rdmarecv_held.one 60
  rdma.gst_uri.one 60
  rdma.link_down.one 60
  rdma.listener_device_removed.one 60
  rdma.memlock_too_low.one 60
  rdma.nothing_listens.one 60
  rdma.rdmarecv_allow_list.one 60
  rdma.rdmarecv_listener_busy.one 170
  rdma.rdmarecv_listener_survives.one 167
  rdma.rdmasrc_listener_survives.one 109
  rdma.receiver_frozen_bounded.one 60
  rdma.receiver_killed.one 60
  rdma.receiver_reconnects.one 60
  rdma.receiver_stopped.one 60
  rdma.reverse_refused_with_reason.one 200
  rdma.ring_busy_poll.one 60
  rdma.ring_intact.one 60
  rdma.ring_out_of_order_release.one 60
  rdma.ring_reverse_direction.one 60
  rdma.rogue_receiver.one 60
  rdma.rogue_receiver_rdmasend.one 157
  rdma.sender_killed.one 60
  rdma.sender_stopped.one 60
  rdma.slow_consumer_live.one 60
  rdma.slow_consumer_lossless.one 60
  rdma.unreachable_peer.one 60
  rdmabed.serve.one 240
  rdmabed.unserve.one 60
  scripts.build_dir 30
  scripts.spdx 30
)
