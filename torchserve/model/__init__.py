"""The project's three small models and the image geometry they share with the handlers.

Serving one photo (what the TorchServe handlers do, and what evaluation does):

    detector = load_detectors("torchserve/weights/detector.pt", "cpu")  # + person_detector.pt
    x, box = detector_input(rgb, detector.size)      # rgb: (H, W, 3) uint8
    figures = decode_figures(detector(x)[0], box, (W, H))
    # -> [{"bbox": [x1, y1, x2, y2], "score": s}, ...] in the photo's pixels, best first,
    # the best narrowed to one person where it boxed a group or a scene (one_person)

    pose = load_pose("torchserve/weights/pose.pt", "cpu")
    x, box = pose_input(crop, pose.size)              # crop: (h, w, 3) uint8 of one figure
    keypoints = decode_keypoints(pose(x)[0], box)
    # -> [[x, y, score] x 17] in the crop's pixels, COCO order (KEYPOINT_NAMES)

    segmenter = load_segmenter("torchserve/weights/segmenter.pt", "cpu")
    x, views = segmenter_views(crop, segmenter.size)  # the same crop, and its mirror image
    mask, score = decode_views(segmenter(x), views, crop.shape[:2])
    # -> (h, w) bool: the figure's filled silhouette at the crop's pixels, mean confidence
    # (training scores one view: segmenter_input, decode_mask)

Inputs of several images stack along the first axis (all are size x size). The modules use
relative imports among themselves only, so the folder also works copied into a .mar.
"""

from .detector import (
    DetectorNet,
    Detectors,
    decode_detections,
    decode_figures,
    detector_input,
    load_detector,
    load_detectors,
)
from .pose import KEYPOINT_NAMES, PoseNet, decode_keypoints, load_pose, pose_input
from .segmenter import (
    SegmenterNet,
    View,
    decode_mask,
    decode_views,
    load_segmenter,
    segmenter_input,
    segmenter_views,
)
from .transforms import Letterbox, letterbox

__all__ = [
    "KEYPOINT_NAMES",
    "DetectorNet",
    "Detectors",
    "Letterbox",
    "PoseNet",
    "SegmenterNet",
    "View",
    "decode_detections",
    "decode_figures",
    "decode_keypoints",
    "decode_mask",
    "decode_views",
    "detector_input",
    "letterbox",
    "load_detector",
    "load_detectors",
    "load_pose",
    "load_segmenter",
    "pose_input",
    "segmenter_input",
    "segmenter_views",
]
